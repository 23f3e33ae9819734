package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/atom-sched/atom/coordinator/api"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// forwardHeartbeat sends a heartbeat that reached a follower to the
// leader's public heartbeat endpoint, with the task's own token. The
// leader's refusal (4xx: bad token, task ended) comes back as an
// *api.StatusError, so the follower answers as the leader did; anything
// else is an error the API answers 503 (retry).
func forwardHeartbeat(client *http.Client, base string, id structs.TaskID, token string, ev structs.TaskEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	err = postOK(context.Background(), client, base+"/v1/tasks/"+string(id)+"/heartbeat", token, body)
	var se *statusErr
	if errors.As(err, &se) && se.status >= 400 && se.status < 500 {
		msg := se.msg
		var we wire.Error
		if json.Unmarshal([]byte(se.body), &we) == nil && we.Error != "" {
			msg = we.Error
		}
		return &api.StatusError{Status: se.status, Msg: msg}
	}
	return err
}

// statusErr is a non-200 answer to postOK.
type statusErr struct {
	status    int
	msg, body string
}

func (e *statusErr) Error() string { return e.msg }

// postOK POSTs body to url with a bearer token and wants a 200.
func postOK(ctx context.Context, client *http.Client, url, bearer string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &statusErr{status: resp.StatusCode, msg: fmt.Sprintf("POST %s: %s: %s", url, resp.Status, bytes.TrimSpace(b)), body: string(b)}
	}
	return nil
}
