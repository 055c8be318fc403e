package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// binary is the gantry built once for the tests that run it as a user would.
var binary string

func TestMain(m *testing.M) {
	// The provider's script runs under the e2e server, so it inherits the server's variable.
	if dir := os.Getenv(e2eProviderEnv); dir != "" {
		os.Exit(e2eProviderMain(dir))
	}
	if cfg := os.Getenv(e2eServerEnv); cfg != "" {
		os.Exit(e2eServerMain(cfg))
	}
	dir, err := os.MkdirTemp("", "gantry-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "gantry")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build gantry: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gantry runs the binary with a clean GANTRY_ environment and returns its output and exit code.
func gantry(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// secretShape is any secret Gantry hands out: join token, node credential, job token,
// API token.
var secretShape = regexp.MustCompile(`\bg(jt|nc|jb|ty)_[A-Za-z0-9_-]{16,}`)

// noSecretsLogged fails the test when a process's log holds a secret.
func noSecretsLogged(t *testing.T, what, log string) {
	t.Helper()
	if m := secretShape.FindAllString(log, 3); len(m) > 0 {
		t.Errorf("the %s log holds secrets: %v", what, m)
	}
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GANTRY_") {
			env = append(env, kv)
		}
	}
	return env
}

func TestHelpListsSubcommands(t *testing.T) {
	out, _, code := gantry(t, nil, "--help")
	if code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, sub := range []string{"serve", "migrate", "bench", "version"} {
		if !strings.Contains(out, sub) {
			t.Errorf("--help does not list %s", sub)
		}
		if sub == "bench" {
			continue
		}
		sout, _, code := gantry(t, nil, sub, "--help")
		if code != 0 || !strings.Contains(sout, "Usage:") {
			t.Errorf("%s --help: exit %d", sub, code)
		}
	}
	for _, sub := range []string{"serve", "migrate"} {
		sout, _, _ := gantry(t, nil, sub, "--help")
		if !strings.Contains(sout, "--data-dir") || !strings.Contains(sout, "--database-url") {
			t.Errorf("%s lacks the database flags", sub)
		}
	}
}

// Every bad input gets one clear line on stderr and a non-zero exit, never a stack trace.
func TestBadInputGetsOneClearLine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(t.TempDir(), "gantry.yaml")
	if err := os.WriteFile(badConfig, []byte("adr: 1.2.3.4:80\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"unknown flag", nil, []string{"serve", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{"stray argument", nil, []string{"migrate", "now"}, 2, `unexpected argument "now"`},
		{"unknown command", nil, []string{"sevre"}, 2, `"sevre" is not a command of gantry: one of `},
		{"unknown subcommand", nil, []string{"job", "list"}, 2, `"list" is not a command of gantry job: one of cancel, get, hold, logs, ls, release, rerun, submit`},
		{"unknown subcommand two deep", nil, []string{"admin", "token", "make"}, 2, `"make" is not a command of gantry admin token`},
		{"a number that is not", nil, []string{"job", "submit", "--gpus", "two"}, 2, `--gpus "two": want a whole number`},
		{"a number too large", nil, []string{"job", "submit", "--gpus", "99999999999999999999"}, 2, `--gpus "99999999999999999999": want a whole number of sensible size`},
		{"not true or false", nil, []string{"nodes", "ls", "--removed=maybe"}, 2, `--removed "maybe": want true or false`},
		{"a drain of no length", nil, []string{"nodes", "drain", "gpu-1", "--for", "soon"}, 2, `--for "soon": want a duration such as 30m or 2h`},
		{"a node verb without its node", nil, []string{"nodes", "cordon"}, 2, "give one node name"},
		{"not a duration", nil, []string{"serve", "--data-dir", t.TempDir(), "--session-idle", "soon"}, 2, `--session-idle "soon": want a duration such as 90s, 30m or 2h`},
		{"malformed database url", nil, []string{"migrate", "--database-url", "mysql://root@db/x"}, 1, "invalid --database-url"},
		{"unreachable postgres", nil, []string{"migrate", "--database-url", "postgres://u:s3cret@127.0.0.1:1/gantry"}, 1, "connect to PostgreSQL at postgres://u:xxxxx@127.0.0.1:1/gantry"},
		{"no database connections", nil, []string{"migrate", "--data-dir", t.TempDir(), "--database-max-conns", "0"}, 2, "--database-max-conns 0: want 1 or more"},
		{"unwritable data dir", nil, []string{"migrate", "--data-dir", filepath.Join(file, "sub")}, 1, "cannot be created: not a directory"},
		{"port in use", nil, []string{"serve", "--data-dir", t.TempDir(), "--addr", busy.Addr().String()}, 1, "address already in use"},
		{"bad log format", nil, []string{"migrate", "--data-dir", t.TempDir(), "--log-format", "xml"}, 2, `--log-format "xml": want text or json`},
		{"bad env value", []string{"GANTRY_LOG_LEVEL=loud"}, []string{"migrate", "--data-dir", t.TempDir()}, 2, `--log-level "loud"`},
		{"healthcheck of nothing", nil, []string{"healthcheck", "--addr", closed.Addr().String()}, 1, "probe /healthz"},
		{"unknown config key", nil, []string{"serve", "--config", badConfig}, 2, `unknown setting "adr"`},
		{"raw telemetry kept too briefly", nil, []string{"serve", "--data-dir", t.TempDir(), "--telemetry-raw-retention", "1m"}, 2,
			"--telemetry-raw-retention 1m0s, --telemetry-rollup-retention 90d: telemetry raw retention 1m0s is too short: keep raw samples at least grace + 2 min (4m0s)"},
		{"roll-ups kept for months", nil, []string{"serve", "--data-dir", t.TempDir(), "--telemetry-rollup-retention", "3 months"}, 2,
			`--telemetry-rollup-retention "3 months": want a number of days such as 90d`},
		{"no job logs", nil, []string{"serve", "--data-dir", t.TempDir(), "--job-log-limit-mib", "0"}, 2, "--job-log-limit-mib 0: want 1 to 1048576 (MiB)"},
		{"output kept for hours", nil, []string{"serve", "--data-dir", t.TempDir(), "--job-log-retention", "12h"}, 2,
			`--job-log-retention "12h": want a number of days such as 90d (at least 1d), or 0 to keep output for good`},
		{"output kept for ever and a day", nil, []string{"serve", "--data-dir", t.TempDir(), "--job-log-retention", "99999999999999d"}, 2,
			`--job-log-retention "99999999999999d": want a number of days`},
		{"no metering", nil, []string{"serve", "--data-dir", t.TempDir(), "--meter-every", "0s"}, 2, "--meter-every 0s: want more than 0 and at most 1h"},
		{"e-mail without a server", nil, []string{"serve", "--data-dir", t.TempDir(), "--smtp-from", "gantry@example.com"}, 2, "--smtp-from, --smtp-user and GANTRY_SMTP_PASSWORD need --smtp-host"},
		{"bad sender", nil, []string{"serve", "--data-dir", t.TempDir(), "--smtp-host", "mail.example", "--smtp-from", "gantry"}, 2, `--smtp-from "gantry": want an e-mail address`},
		{"password without user", []string{"GANTRY_SMTP_PASSWORD=s3cret"}, []string{"serve", "--data-dir", t.TempDir(), "--smtp-host", "mail.example", "--smtp-from", "gantry@example.com"}, 2, "--smtp-user and GANTRY_SMTP_PASSWORD go together"},
		{"unknown runtime", nil, []string{"agent", "--server", "http://127.0.0.1:1", "--data-dir", t.TempDir(), "--runtime", "kubernetes"}, 2, `--runtime "kubernetes": want process, docker or podman`},
		{"runtime without its command", nil, []string{"agent", "--server", "http://127.0.0.1:1", "--data-dir", t.TempDir(), "--log-level", "error",
			"--runtime", "podman", "--container-cli", filepath.Join(t.TempDir(), "podman")}, 1, "--runtime podman needs the podman command: install it or give its path with --container-cli"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := gantry(t, tc.env, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr, tc.want)
			}
			if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "s3cret") {
				t.Errorf("stderr leaks a stack trace or a secret: %s", stderr)
			}
			if strings.Contains(stderr, "strconv.") {
				t.Errorf("stderr speaks Go: %s", stderr)
			}
		})
	}
}

func TestMigrateTwice(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := gantry(t, nil, "migrate", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "migrated to schema version") {
		t.Fatalf("first migrate: exit %d, %s %s", code, out, stderr)
	}
	out, _, code = gantry(t, []string{"GANTRY_DATA_DIR=" + dir}, "migrate")
	if code != 0 || !strings.Contains(out, "already at schema version") {
		t.Fatalf("second migrate through GANTRY_DATA_DIR: exit %d, %s", code, out)
	}
}

// serve starts `gantry serve` and returns its base URL and a stop function that
// sends SIGTERM and returns the exit code and the log.
func serve(t *testing.T, env []string, args ...string) (string, func() (int, string)) {
	t.Helper()
	url, stop, _ := serveLogged(t, env, args...)
	return url, stop
}

// logBuffer is a server's log as it is written, readable while the server runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the log holds s.
func (l *logBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(l.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's log never said %s: %s", s, l.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveLogged is serve that also gives the server's log while it runs.
func serveLogged(t *testing.T, env []string, args ...string) (string, func() (int, string), *logBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("serve printed no URL; log: %s", logs.String())
	}
	i := strings.Index(line, "http://")
	if i < 0 {
		cmd.Process.Kill()
		t.Fatalf("serve printed %q; log: %s", line, logs.String())
	}
	url := strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	stopped := false
	stop := func() (int, string) {
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, logs.String()
	}
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
		noSecretsLogged(t, "serve", logs.String())
	})
	return url, stop, logs
}

func TestServeOnEveryDatabase(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			var env []string
			// serve tunes the collector unless the operator did: one backend each way.
			wantGC := `"setting":"GOGC as set, memory limit `
			if cfg.DatabaseURL != "" {
				// The data dir still keeps the local agent's state: not in the source tree.
				env = []string{"GANTRY_DATABASE_URL=" + cfg.DatabaseURL, "GANTRY_DATA_DIR=" + t.TempDir(), "GOGC=150", "GOMEMLIMIT=1GiB"}
				wantGC += `none"`
			} else {
				env = []string{"GANTRY_DATA_DIR=" + cfg.DataDir, "GOGC="}
				wantGC = `"setting":"GOGC=400, memory limit `
			}
			url, stop, running := serveLogged(t, env, "--log-format", "json")
			addr := strings.TrimPrefix(url, "http://")
			if out, stderr, code := gantry(t, nil, "healthcheck", "--addr", addr); code != 0 || strings.TrimSpace(out) != "ok" {
				t.Fatalf("healthcheck against a live server: exit %d %s", code, stderr)
			}
			res, err := http.Get(url + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("readyz = %d", res.StatusCode)
			}
			// The leader writes the first anchor once it holds the leader lock, which may
			// come after serve answers requests.
			anchor := `"msg":"audit anchor","component":"audit","anchor":"`
			running.waitFor(t, anchor)
			code, logs := stop()
			if code != 0 {
				t.Fatalf("serve exit %d after SIGTERM; log: %s", code, logs)
			}
			if !strings.Contains(logs, `"msg":"request"`) || !strings.Contains(logs, `"request_id":"`) || !strings.Contains(logs, `"path":"/readyz"`) {
				t.Errorf("JSON access log with request id missing: %s", logs)
			}
			if !strings.Contains(logs, `"msg":"garbage collector",`) || !strings.Contains(logs, wantGC) {
				t.Errorf("no line %s on the garbage collector's setting: %s", wantGC, logs)
			}
			if !strings.Contains(logs, `"msg":"/metrics is public`) {
				t.Errorf("no warning that /metrics is public without a scrape token: %s", logs)
			}
			if !strings.Contains(logs, `"msg":"shutting down"`) {
				t.Errorf("no graceful shutdown in the log: %s", logs)
			}
			// The leader wrote the audit log's head to its log; verify reads it back.
			saved := filepath.Join(t.TempDir(), "serve.log")
			if err := os.WriteFile(saved, []byte(logs), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, stderr, code := gantry(t, nil, append([]string{"audit", "verify", "--anchors", saved}, dbArgs(cfg)...)...); code != 0 || !strings.Contains(out, "anchors holds") {
				t.Errorf("verify against the anchors serve logged: exit %d %s %s", code, out, stderr)
			}
		})
	}
}

func TestConfigFileAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "gantry.yaml")
	if err := os.WriteFile(cfgFile, []byte("data-dir: "+dir+"\nlog-format: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The config file sets the data dir and log format; the flag wins for the log format.
	_, stderr, code := gantry(t, nil, "migrate", "--config", cfgFile, "--log-format", "text")
	if code != 0 {
		t.Fatalf("migrate with config: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "gantry.db")); err != nil {
		t.Fatalf("config file data-dir not used: %v", err)
	}
	// The environment wins over the config file.
	envDir := t.TempDir()
	_, stderr, code = gantry(t, []string{"GANTRY_CONFIG=" + cfgFile, "GANTRY_DATA_DIR=" + envDir}, "migrate")
	if code != 0 {
		t.Fatalf("migrate with env: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(envDir, "gantry.db")); err != nil {
		t.Fatalf("GANTRY_DATA_DIR did not win over the config file: %v", err)
	}
}
