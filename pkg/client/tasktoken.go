package client

import (
	"context"
	"net/http"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// TaskToken exchanges the service-account token of task id's Pod (a
// projected token bound to the Pod, audience atom) for the task's
// allocation token and its atom's environment.
func (c *Client) TaskToken(ctx context.Context, id structs.TaskID, serviceAccountToken, nonce string) (wire.TaskToken, error) {
	var out wire.TaskToken
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/tasks/" + seg(string(id)) + "/token",
		body: jsonBody(wire.TaskTokenRequest{ServiceAccountToken: serviceAccountToken, Nonce: nonce}), header: jsonHeader(), out: &out})
	return out, err
}
