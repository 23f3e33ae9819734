package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// forwardHeartbeat sends a heartbeat that reached a follower to the
// leader's public heartbeat endpoint, with the task's own token.
func forwardHeartbeat(client *http.Client, base string, id structs.TaskID, token string, ev state.TaskEvent) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return postOK(context.Background(), client, base+"/v1/tasks/"+string(id)+"/heartbeat", token, body)
}

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
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
