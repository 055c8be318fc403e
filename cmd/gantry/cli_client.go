package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// cliConfig is what `gantry login` keeps in the user's config directory.
type cliConfig struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
}

// cliConfigPath is where the CLI keeps the server and token: $XDG_CONFIG_HOME/gantry/cli.yaml
// on Linux (see os.UserConfigDir for other systems).
func cliConfigPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory: %w", err)
	}
	return filepath.Join(dir, "gantry", "cli.yaml"), nil
}

func loadCLIConfig() (cliConfig, error) {
	var c cliConfig
	path, err := cliConfigPath()
	if err != nil {
		return c, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s is not valid YAML: %v (sign in again with gantry login)", path, err)
	}
	return c, nil
}

// saveCLIConfig writes c readable by the user only: it holds an API token.
func saveCLIConfig(c cliConfig) (string, error) {
	path, err := cliConfigPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the CLI config: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	// WriteFile keeps the mode of a file that was already there.
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", fmt.Errorf("restrict %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// clientOpts are the flags of every command that talks to a Gantry server.
type clientOpts struct {
	server string
	token  string
	output string
}

func (o *clientOpts) addFlags(cmd *cobra.Command, output bool) {
	cmd.Flags().StringVar(&o.server, "server", "", "Gantry server URL (default: the one of gantry login)")
	cmd.Flags().StringVar(&o.token, "token", "", "API token (default: the one of gantry login; GANTRY_TOKEN also works)")
	o.output = "table"
	if output {
		cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	}
}

// client checks the output format and returns a client for the server and token of
// the flags, else of gantry login.
func (o *clientOpts) client() (*apiClient, error) {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return nil, usageError{fmt.Errorf("-o %q: want table, json or yaml", o.output)}
	}
	cfg, err := loadCLIConfig()
	if err != nil {
		return nil, err
	}
	if o.server != "" {
		cfg.Server = o.server
	}
	if o.token != "" {
		cfg.Token = o.token
	}
	if cfg.Server == "" || cfg.Token == "" {
		return nil, errors.New("not signed in: run gantry login --server URL first (or pass --server and --token)")
	}
	base, err := serverURL(cfg.Server)
	if err != nil {
		return nil, err
	}
	return &apiClient{base: base, token: cfg.Token, http: &http.Client{}}, nil
}

// serverURL checks a server URL given by a person and drops a trailing slash.
func serverURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageError{fmt.Errorf("--server %q: want the server's URL, such as https://gantry.example.com", s)}
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// apiClient calls Gantry's JSON API with an API token.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

func (e *apiError) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Status == http.StatusUnauthorized && !strings.Contains(msg, "gantry login") {
		msg = strings.TrimSuffix(msg, ".") + " (sign in again with gantry login)"
	}
	return msg
}

// retryable says whether sending a request again may succeed: the server could not be
// reached, its answer was cut short, or it answered that it failed or is busy.
func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests
	}
	return true
}

// callTimeout bounds one API call; following logs has no bound.
const callTimeout = 30 * time.Second

// call sends one request and returns the body of a 2xx answer, or an *apiError.
func (c *apiClient) call(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	return c.callWith(ctx, method, path, query, body, nil)
}

// callWith is call with header added to the request.
func (c *apiClient) callWith(ctx context.Context, method, path string, query url.Values, body []byte, header http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.sendWith(ctx, method, path, query, body, header)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", c.base, err)
	}
	return b, nil
}

// send sends one request and returns a 2xx response with its body open.
func (c *apiClient) send(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	return c.sendWith(ctx, method, path, query, body, nil)
}

// sendWith is send with header added to the request.
func (c *apiClient) sendWith(ctx context.Context, method, path string, query url.Values, body []byte, header http.Header) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s: %w", c.base, errors.Unwrap(err))
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var e struct {
		Error apiError `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		return nil, &apiError{Status: res.StatusCode, Message: fmt.Sprintf("%s answered %s", c.base, res.Status)}
	}
	e.Error.Status = res.StatusCode
	return nil, &e.Error
}

// getJSON calls GET path and decodes the answer into v.
func (c *apiClient) getJSON(ctx context.Context, path string, query url.Values, v any) ([]byte, error) {
	b, err := c.call(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", c.base, err)
	}
	return b, nil
}

// printRaw writes an API answer as JSON (indented) or YAML.
func printRaw(w io.Writer, format string, raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if format == "yaml" {
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// post sends body to path for an admin's verb and prints the answer as -o asks: the
// API's JSON or YAML, or for a table the line that say makes of it.
func (o *clientOpts) post(cmd *cobra.Command, what, path string, body []byte, say func(raw []byte) (string, error)) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	raw, err := c.call(cmd.Context(), http.MethodPost, path, nil, body)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if o.output != "table" {
		return printRaw(cmd.OutOrStdout(), o.output, raw)
	}
	line, err := say(raw)
	if err != nil {
		return fmt.Errorf("%s: read the answer of %s: %w", what, c.base, err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), line)
	return nil
}
