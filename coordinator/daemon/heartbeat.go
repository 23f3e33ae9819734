package daemon

import (
	"bytes"
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
	req, err := http.NewRequest(http.MethodPost, base+"/v1/tasks/"+string(id)+"/heartbeat", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("forward heartbeat to %s: %s: %s", base, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
