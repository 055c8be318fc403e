package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

var (
	// ErrUnauthorized: the server refused the join token or node credential.
	ErrUnauthorized = errors.New("refused by the server")
	// errStale: the server no longer runs this attempt here; stop it.
	errStale = errors.New("stale attempt")
)

// apiError is an error answer of the server.
type apiError struct {
	status int
	body   agentapi.ErrorBody
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("server answered %d %s: %s", e.status, e.body.Error.Code, e.body.Error.Message)
	if e.body.Error.Field != "" {
		msg += " (field " + e.body.Error.Field + ")"
	}
	return msg
}

// serverDown reports whether err says the server is not there at all, as opposed
// to unreachable: a server that is down cannot reschedule this node's jobs.
func serverDown(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status == http.StatusBadGateway || ae.status == http.StatusServiceUnavailable || ae.status == http.StatusGatewayTimeout
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// client speaks the agent protocol to one server.
type client struct {
	base       string
	http       *http.Client
	credential string
}

func newClient(server string, hc *http.Client) (*client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want the server's URL, e.g. https://gantry.example.com", server)
	}
	u.Path, u.RawQuery, u.Fragment = "", "", ""
	return &client{base: u.String(), http: hc}, nil
}

// do sends body as JSON (nil sends nothing) and decodes a 2xx answer into out.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.credential != "" {
		req.Header.Set("Authorization", "Bearer "+c.credential)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read answer to %s: %w", path, err)
	}
	if res.StatusCode/100 != 2 {
		ae := &apiError{status: res.StatusCode}
		if json.Unmarshal(data, &ae.body) != nil || ae.body.Error.Code == "" {
			ae.body.Error.Code = http.StatusText(res.StatusCode)
			ae.body.Error.Message = string(bytes.TrimSpace(data[:min(len(data), 200)]))
		}
		switch {
		case res.StatusCode == http.StatusUnauthorized:
			return fmt.Errorf("%w: %s", ErrUnauthorized, ae.body.Error.Message)
		case ae.body.Error.Code == agentapi.CodeStaleAttempt:
			return fmt.Errorf("%w: %s", errStale, ae.body.Error.Message)
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer to %s: %w", path, err)
	}
	return nil
}

func (c *client) join(ctx context.Context, req agentapi.JoinRequest) (agentapi.JoinResponse, error) {
	var out agentapi.JoinResponse
	err := c.do(ctx, http.MethodPost, agentapi.PathJoin, req, &out)
	return out, err
}

func (c *client) heartbeat(ctx context.Context, req agentapi.HeartbeatRequest) (agentapi.HeartbeatResponse, error) {
	var out agentapi.HeartbeatResponse
	err := c.do(ctx, http.MethodPost, agentapi.PathHeartbeat, req, &out)
	return out, err
}

// leases long-polls: the server answers at once when the set differs from seen,
// else when it changes or after wait.
func (c *client) leases(ctx context.Context, seen string, wait time.Duration) (agentapi.Leases, error) {
	q := url.Values{"version": {seen}, "wait": {wait.String()}}
	var out agentapi.Leases
	err := c.do(ctx, http.MethodGet, agentapi.PathLeases+"?"+q.Encode(), nil, &out)
	return out, err
}

func (c *client) report(ctx context.Context, r agentapi.Report) error {
	return c.do(ctx, http.MethodPost, agentapi.PathReport, r, nil)
}

// jobToken asks for a new job token for an attempt not started yet.
func (c *client) jobToken(ctx context.Context, ref agentapi.AttemptRef) (string, error) {
	var out agentapi.JobTokenResponse
	err := c.do(ctx, http.MethodPost, agentapi.PathJobToken, ref, &out)
	return out.JobToken, err
}

// logs sends a chunk and returns the server's answer: the offset it wants next, and
// whether it keeps no more of the stream; a chunk that starts past the server's end
// is answered with that end, not an error.
func (c *client) logs(ctx context.Context, chunk agentapi.LogChunk) (agentapi.LogAck, error) {
	var ack agentapi.LogAck
	err := c.do(ctx, http.MethodPost, agentapi.PathLogs, chunk, &ack)
	var ae *apiError
	if errors.As(err, &ae) && ae.body.Error.Code == agentapi.CodeLogOffset && ae.body.NextOffset != nil {
		return agentapi.LogAck{NextOffset: *ae.body.NextOffset}, nil
	}
	return ack, err
}
