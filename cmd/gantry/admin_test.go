package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveFor starts `gantry serve` on dir and returns its URL and a stop function that
// returns everything it printed on standard output.
func serveFor(t *testing.T, dir string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--bcrypt-cost", "4"}, args...)...)
	cmd.Env = cleanEnv()
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	first := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if out.Len() == 0 {
				first <- sc.Text()
			}
			out.WriteString(sc.Text() + "\n")
		}
		close(done)
	}()
	var line string
	select {
	case line = <-first:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve printed nothing")
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	u := regexp.MustCompile(`http://\S+/`).FindString(line)
	return strings.TrimSuffix(u, "/"), func() string {
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
		cmd.Wait()
		return out.String()
	}
}

// signInStatus posts the login form and returns the status.
func signInStatus(t *testing.T, base, user, password string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// With password login off the page has no form; its cookie still carries the token.
	var token string
	if m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(string(b)); m != nil {
		token = m[1]
	} else if u, _ := url.Parse(base); len(jar.Cookies(u)) == 1 {
		token = jar.Cookies(u)[0].Value
	}
	res, err = c.PostForm(base+"/login", url.Values{"csrf_token": {token}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

var printedPassword = regexp.MustCompile(`created user "admin" \(admin\) with password ([A-Z2-7]{26})`)

func TestFirstStartAdminPasswordResetAndTokens(t *testing.T) {
	dir := t.TempDir()
	base, stop := serveFor(t, dir)
	time.Sleep(200 * time.Millisecond) // let serve finish printing the password after its URL
	out := stop()
	m := printedPassword.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("first start did not print the admin password: %q", out)
	}
	password := m[1]
	base, stop = serveFor(t, dir)
	if status := signInStatus(t, base, "admin", password); status != http.StatusSeeOther {
		t.Fatalf("sign in with the printed password = %d", status)
	}
	// An offline token for scripts works against the live server.
	secret, stderr, code := gantry(t, nil, "admin", "token", "create", "--data-dir", dir, "--user", "admin", "--scope", "read", "--expires", "7d")
	secret = strings.TrimSpace(secret)
	if code != 0 || !strings.HasPrefix(secret, "gty_") || !strings.Contains(stderr, "It is shown only now") {
		t.Fatalf("token create: exit %d %q %s", code, secret, stderr)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"username":"admin"`) || !strings.Contains(string(b), `"token_scope":"read"`) {
		t.Fatalf("me with the CLI's token = %d %s", res.StatusCode, b)
	}
	// Resetting the password offline: the old one stops working, the new one works.
	out2, _, code := gantry(t, nil, "admin", "reset-password", "--data-dir", dir, "admin")
	np := regexp.MustCompile(`New password for admin: ([A-Z2-7]{26})`).FindStringSubmatch(out2)
	if code != 0 || np == nil {
		t.Fatalf("reset-password: exit %d %q", code, out2)
	}
	if status := signInStatus(t, base, "admin", password); status != http.StatusUnauthorized {
		t.Fatalf("the old password after a reset = %d", status)
	}
	if status := signInStatus(t, base, "admin", np[1]); status != http.StatusSeeOther {
		t.Fatalf("the new password = %d", status)
	}
	// Password login off, then on again: the break-glass switch.
	if _, _, code := gantry(t, nil, "admin", "local-login", "off", "--data-dir", dir); code != 0 {
		t.Fatal("local-login off failed")
	}
	if status := signInStatus(t, base, "admin", np[1]); status != http.StatusForbidden {
		t.Fatalf("password login while off = %d", status)
	}
	if _, _, code := gantry(t, nil, "admin", "local-login", "on", "--data-dir", dir); code != 0 {
		t.Fatal("local-login on failed")
	}
	if status := signInStatus(t, base, "admin", np[1]); status != http.StatusSeeOther {
		t.Fatalf("password login on again = %d", status)
	}
	if again := stop(); printedPassword.MatchString(again) {
		t.Fatalf("a second start printed a password again: %q", again)
	}
	// Every step is in the audit log, and the chain holds.
	out3, _, code := gantry(t, nil, "audit", "export", "--data-dir", dir, "--action", "user.password_reset")
	if code != 0 || !strings.Contains(out3, `"actor":"cli:`) {
		t.Fatalf("the reset is not audited as done from the command line: %s", out3)
	}
	if out, _, code := gantry(t, nil, "audit", "verify", "--data-dir", dir); code != 0 || !strings.Contains(out, "audit log intact") {
		t.Fatalf("verify: exit %d %s", code, out)
	}
}

func TestAdminCommandsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, _, code := gantry(t, nil, "migrate", "--data-dir", dir); code != 0 {
		t.Fatal("migrate failed")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"admin", "reset-password", "--data-dir", dir}, "name one user"},
		{[]string{"admin", "reset-password", "--data-dir", dir, "ghost"}, `USER: no user is called "ghost"`},
		{[]string{"admin", "token", "create", "--data-dir", dir}, "--user: name the user"},
		{[]string{"admin", "token", "create", "--data-dir", dir, "--user", "ghost"}, `--user: no user is called "ghost"`},
		{[]string{"admin", "token", "create", "--data-dir", dir, "--user", "x", "--expires", "soon"}, `--expires "soon": want a number of days`},
		{[]string{"admin", "local-login", "--data-dir", dir, "maybe"}, "say on or off"},
		{[]string{"serve", "--data-dir", dir, "--bcrypt-cost", "99"}, "--bcrypt-cost 99: want 4 to 31"},
		{[]string{"serve", "--data-dir", dir, "--trusted-proxies", "the-lb"}, `--trusted-proxies "the-lb"`},
		{[]string{"serve", "--data-dir", dir, "--metrics-token", "short"}, "--metrics-token: want at least 16 characters"},
		{[]string{"serve", "--data-dir", dir, "--metrics-token", "sixteen chars or more"}, "without spaces"},
		{[]string{"serve", "--data-dir", dir, "--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "gantry"}, "needs --oidc-redirect-url or --public-url"},
		{[]string{"serve", "--data-dir", dir, "--oidc-issuer", "idp", "--oidc-client-id", "g", "--public-url", "https://g.example.com"}, `--oidc-issuer "idp": want an http(s) URL`},
	}
	for _, tc := range cases {
		_, stderr, code := gantry(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("%v: exit %d %q, want 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
