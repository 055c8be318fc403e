package containertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry is a real OCI distribution registry (go-containerregistry's pkg/registry)
// served in the test process on loopback over plain HTTP, so that the runtimes pull
// from a registry as they would from any. Docker takes 127.0.0.0/8 over plain HTTP by
// itself; podman needs the registry named insecure in its registries.conf, which Env
// gives the processes that run podman.
type Registry struct {
	// Host is 127.0.0.1:PORT, the registry part of its image references.
	Host string
	// Env is what a process that runs the runtimes needs in its environment:
	// CONTAINERS_REGISTRIES_CONF naming a registries.conf that marks Host insecure.
	Env []string

	mu      sync.Mutex
	fetched map[string]int // repository -> manifests served
}

// NewRegistry starts an empty registry, stopped when t ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{fetched: map[string]int{}}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if repo, ok := manifestRepo(req); ok {
			r.mu.Lock()
			r.fetched[repo]++
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	conf := filepath.Join(t.TempDir(), "registries.conf")
	text := fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", r.Host)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Env = []string{"CONTAINERS_REGISTRIES_CONF=" + conf}
	return r
}

// manifestRepo names the repository of a request for a manifest
// (/v2/REPO/manifests/REF): a GET, or the HEAD with which docker resolves a tag.
func manifestRepo(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return "", false
	}
	path, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		return "", false
	}
	repo, _, ok := strings.Cut(path, "/manifests/")
	return repo, ok
}

// Push pushes the test image (the host's busybox, as Runtime imports it) as a new tag
// of repo and returns its reference; every call pushes a tag no runtime holds yet, of
// an image of its own (its label names repo and tag), which a runtime has to fetch.
func (r *Registry) Push(t testing.TB, repo string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, _, err := busyboxRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(root)), nil })
	if err != nil {
		t.Fatal(err)
	}
	tag := make([]byte, 6)
	rand.Read(tag)
	ref, err := name.NewTag(r.Host+"/"+repo+":"+hex.EncodeToString(tag), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	cfg := v1.Config{Env: []string{"PATH=/bin"}, Labels: map[string]string{"gantry.test.image": repo + ":" + ref.TagStr()}}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH, Config: cfg})
	if err == nil {
		img, err = mutate.AppendLayers(img, layer)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push the test image to %s: %v", ref, err)
	}
	// The push asked for the manifest too; only pulls count.
	r.mu.Lock()
	delete(r.fetched, repo)
	r.mu.Unlock()
	return ref.String()
}

// Fetched is how many times the registry was asked for a manifest of repo since repo
// was last pushed: a pull asks.
func (r *Registry) Fetched(repo string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetched[repo]
}
