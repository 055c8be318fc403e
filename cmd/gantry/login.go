package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newLoginCmd() *cobra.Command {
	var server, token string
	cmd := &cobra.Command{
		Use:   "login --server URL",
		Short: "Sign the CLI in to a Gantry server with an API token",
		Long: `Sign the CLI in to a Gantry server: checks the API token with the server, then keeps
server and token in your config directory ($XDG_CONFIG_HOME/gantry/cli.yaml, or
~/.config/gantry/cli.yaml), readable only by you.

Make a token on the portal's "API tokens" page (write scope to submit and cancel jobs).
The token is read from --token, else from a prompt on a terminal, else from the first
line of standard input:

  gantry login --server https://gantry.example.com
  echo "$GANTRY_TOKEN" | gantry login --server https://gantry.example.com`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				return usageError{errors.New("--server is required: the URL of the Gantry portal")}
			}
			base, err := serverURL(server)
			if err != nil {
				return err
			}
			if token == "" {
				if token, err = readToken(cmd.InOrStdin(), cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			c := &apiClient{base: base, token: token, http: &http.Client{}}
			var me struct {
				Username   string `json:"username"`
				TokenScope string `json:"token_scope"`
			}
			if _, err := c.getJSON(cmd.Context(), "/api/v1/me", nil, &me); err != nil {
				return fmt.Errorf("check the token with %s: %w", base, err)
			}
			path, err := saveCLIConfig(cliConfig{Server: base, Token: token})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Signed in to %s as %s (token scope %s); saved in %s.\n", base, me.Username, me.TokenScope, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "URL of the Gantry portal, e.g. https://gantry.example.com")
	cmd.Flags().StringVar(&token, "token", "", "API token (gty_…); prefer the prompt or standard input, which keep it off the process list")
	return cmd
}

// readToken asks for the token without echo on a terminal, else reads the first line of in.
func readToken(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "API token (from the portal's API tokens page): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		return tokenOrError(string(b))
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the token from standard input: %w", err)
	}
	return tokenOrError(line)
}

func tokenOrError(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", usageError{errors.New("no token given: pass --token, type it at the prompt, or pipe it to standard input")}
	}
	return s, nil
}
