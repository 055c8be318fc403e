// Package containertest gives tests a real docker or podman and a small image
// built on the spot from the host's static busybox, so that nothing is pulled from
// a registry. Where a runtime cannot run containers the tests that need it skip,
// saying why, unless GANTRY_REQUIRE_PODMAN=1 (GANTRY_REQUIRE_DOCKER=1) makes
// that a failure; scripts/test.sh sets both up (scripts/containers.sh).
package containertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Runtimes are the container runtimes the agent drives.
var Runtimes = []string{"docker", "podman"}

// ready is what was found out about each runtime in this process.
var ready = struct {
	sync.Mutex
	m map[string]result
}{m: map[string]result{}}

type result struct {
	cli, image string
	err        error
}

// requireEnv names the variable that makes a missing runtime a failure.
func requireEnv(runtime string) string { return "GANTRY_REQUIRE_" + strings.ToUpper(runtime) }

// Runtime returns the runtime's command and a local image with busybox in /bin (sh,
// sleep, cat, wget and the rest), or skips t when the runtime cannot run a container
// here (fails it when the runtime is required).
func Runtime(t testing.TB, runtime string) (cli, image string) {
	t.Helper()
	ready.Lock()
	r, ok := ready.m[runtime]
	if !ok {
		r = prepare(runtime)
		ready.m[runtime] = r
	}
	ready.Unlock()
	if r.err != nil {
		if os.Getenv(requireEnv(runtime)) == "1" {
			t.Fatalf("%s is required (%s=1) but cannot run containers here: %v", runtime, requireEnv(runtime), r.err)
		}
		t.Skipf("SKIP: %s cannot run containers here (%v); scripts/test.sh sets it up, %s=1 makes this a failure", runtime, r.err, requireEnv(runtime))
	}
	return r.cli, r.image
}

func prepare(runtime string) result {
	cli, err := exec.LookPath(runtime)
	if err != nil {
		return result{err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	check := []string{"info", "--format", "{{.Version.Version}}"}
	if runtime == "docker" {
		check = []string{"version", "--format", "{{.Server.Version}}"}
	}
	if _, err := run(ctx, cli, nil, check...); err != nil {
		return result{err: err}
	}
	image, err := busyboxImage(ctx, cli)
	if err != nil {
		return result{err: err}
	}
	if _, err := run(ctx, cli, nil, "run", "--rm", "--network", "none", image, "/bin/true"); err != nil {
		return result{err: fmt.Errorf("a first container does not run: %w", err)}
	}
	return result{cli: cli, image: image}
}

// busyboxImage imports, once, an image of the host's static busybox with a link per applet.
func busyboxImage(ctx context.Context, cli string) (string, error) {
	root, tag, err := busyboxRoot(ctx)
	if err != nil {
		return "", err
	}
	ref := "localhost/gantry-test/busybox:" + tag
	if _, err := run(ctx, cli, nil, "image", "inspect", "--format", "{{.Id}}", ref); err == nil {
		return ref, nil
	}
	if _, err := run(ctx, cli, bytes.NewBuffer(root), "import", "--change", "ENV PATH=/bin", "-", ref); err != nil {
		return "", fmt.Errorf("import the test image: %w", err)
	}
	return ref, nil
}

// busyboxRoot is the test image's file system as a tar: the host's static busybox in
// /bin with a link per applet, and a passwd naming root. The tag names the busybox.
func busyboxRoot(ctx context.Context) (root []byte, tag string, err error) {
	path, err := staticBusybox()
	if err != nil {
		return nil, "", err
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(bin)
	list, err := exec.CommandContext(ctx, path, "--list").Output()
	if err != nil {
		return nil, "", fmt.Errorf("list busybox applets: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "tmp/", "etc/", "proc/", "sys/", "dev/", "root/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return nil, "", err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		return nil, "", err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, "", err
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, "", err
		}
	}
	passwd := []byte("root:x:0:0:root:/root:/bin/sh\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644, Size: int64(len(passwd))}); err != nil {
		return nil, "", err
	}
	if _, err := tw.Write(passwd); err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), hex.EncodeToString(sum[:6]), nil
}

// staticBusybox finds a busybox that runs without a dynamic loader (Debian's
// busybox-static), so that it runs in an image holding nothing else.
func staticBusybox() (string, error) {
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
	}
	return "", errors.New("no static busybox to build the test image from (apt-get install busybox-static)")
}

func run(ctx context.Context, cli string, stdin *bytes.Buffer, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, cli, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", cli, args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// RemoveImages removes the images, for a test's cleanup.
func RemoveImages(t testing.TB, cli string, refs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ref := range refs {
		out, err := exec.CommandContext(ctx, cli, "rmi", "--force", ref).CombinedOutput()
		if err != nil && !strings.Contains(strings.ToLower(string(out)), "no such image") && !strings.Contains(string(out), "image not known") {
			t.Logf("remove test image %s: %v: %s", ref, err, out)
		}
	}
}

// Remove removes the named containers, for a test's cleanup.
func Remove(t testing.TB, cli string, names ...string) {
	t.Helper()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, append([]string{"rm", "--force"}, names...)...).CombinedOutput()
	if err != nil && !strings.Contains(strings.ToLower(string(out)), "no such container") {
		t.Logf("remove test containers: %v: %s", err, out)
	}
}
