package pools_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// cloudEnv makes the test binary a provider script: a fake cloud whose machines are
// files in the directory the variable names.
const cloudEnv = "GANTRY_TEST_CLOUD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(cloudEnv); dir != "" {
		os.Exit(fakeCloud(dir))
	}
	os.Exit(m.Run())
}

// cloudRequest is the exec provider's request as a script reads it.
type cloudRequest struct {
	Action string `json:"action"`
	Pool   struct {
		Name string `json:"name"`
	} `json:"pool"`
	Server string `json:"server"`
	Nodes  []struct {
		Name      string `json:"name"`
		JoinToken string `json:"join_token"`
	} `json:"nodes"`
	Delete []struct {
		Name string `json:"name"`
	} `json:"delete"`
}

// machine is one machine of the fake cloud.
type machine struct {
	Pool       string `json:"pool"`
	Name       string `json:"name"`
	ProviderID string `json:"provider_id"`
	JoinToken  string `json:"join_token"`
}

// fakeCloud answers one request: create writes a machine file (holding the join
// token its agent would boot with), delete removes it, list prints the pool's, with
// an interruption for machines that have an "<name>.interrupt" file.
func fakeCloud(dir string) int {
	var req cloudRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "fake cloud:", err)
		return 2
	}
	out := map[string]any{"nodes": []any{}}
	switch req.Action {
	case "create":
		var made []any
		for i, n := range req.Nodes {
			m := machine{Pool: req.Pool.Name, Name: n.Name, ProviderID: fmt.Sprintf("i-%d-%d", time.Now().UnixNano(), i), JoinToken: n.JoinToken}
			b, _ := json.Marshal(m)
			if err := os.WriteFile(filepath.Join(dir, n.Name+".json"), b, 0o600); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			made = append(made, map[string]string{"name": m.Name, "provider_id": m.ProviderID})
		}
		out["nodes"] = made
	case "delete":
		for _, n := range req.Delete {
			os.Remove(filepath.Join(dir, n.Name+".json"))
		}
	case "list":
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		var list []any
		for _, f := range files {
			var m machine
			b, _ := os.ReadFile(f)
			if json.Unmarshal(b, &m) != nil || m.Pool != req.Pool.Name {
				continue
			}
			entry := map[string]any{"name": m.Name, "provider_id": m.ProviderID, "state": "running"}
			if _, err := os.Stat(filepath.Join(dir, m.Name+".interrupt")); err == nil {
				entry["interruption"] = map[string]any{"deadline": time.Now().Add(2 * time.Minute).UTC(), "reason": "spot capacity reclaimed"}
			}
			list = append(list, entry)
		}
		if list != nil {
			out["nodes"] = list
		}
	default:
		fmt.Fprintln(os.Stderr, "fake cloud: unknown action", req.Action)
		return 2
	}
	json.NewEncoder(os.Stdout).Encode(out)
	return 0
}
