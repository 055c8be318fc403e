package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// identityFile holds the node's credential inside the data dir.
const identityFile = "node.json"

// identity is what a join gave this node; the credential is a secret (mode 0600).
type identity struct {
	Server     string `json:"server"`
	NodeID     int64  `json:"node_id"`
	Name       string `json:"name"`
	Credential string `json:"credential"`
}

// loadIdentity returns the saved identity, or nil when the node never joined.
func loadIdentity(dataDir string) (*identity, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, identityFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read node identity: %w", err)
	}
	var id identity
	if err := json.Unmarshal(b, &id); err != nil || id.Credential == "" {
		return nil, fmt.Errorf("node identity %s is damaged: remove it and join again with a new join token", filepath.Join(dataDir, identityFile))
	}
	return &id, nil
}

func saveIdentity(dataDir string, id identity) error {
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dataDir, identityFile), b, 0o600)
}

// writeFileAtomic writes data to path through a temporary file and a rename, so a
// reader sees the old content or the new, never half of it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
