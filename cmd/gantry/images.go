package main

import (
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "images", Short: "The image catalog of a Gantry server; admins add, certify and deprecate images (after gantry login)"}
	var o clientOpts
	var search, framework, status string
	ls := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List the catalog's images",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"q": search, "framework": framework, "status": status} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var out struct {
				Images []struct {
					Name             string `json:"name"`
					Reference        string `json:"reference"`
					Framework        string `json:"framework"`
					FrameworkVersion string `json:"framework_version"`
					CUDAVersion      string `json:"cuda_version"`
					Status           string `json:"status"`
				} `json:"images"`
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/images", q, &out)
			if err != nil {
				return fmt.Errorf("list images: %w", err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tFRAMEWORK\tCUDA\tSTATUS\tREFERENCE")
			for _, i := range out.Images {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", i.Name, strings.TrimSpace(i.Framework+" "+i.FrameworkVersion), dashIfEmpty(i.CUDAVersion), i.Status, i.Reference)
			}
			return w.Flush()
		},
	}
	o.addFlags(ls, true)
	ls.Flags().StringVar(&search, "search", "", "words to look for in names, references and versions")
	ls.Flags().StringVar(&framework, "framework", "", "pytorch, tensorflow, jax, cuda, …")
	ls.Flags().StringVar(&status, "status", "", "certified, uncertified or deprecated")
	cmd.AddCommand(ls, newImageAddCmd(),
		newImageStatusCmd("certify", "certified", "Certify an image (admins): the submit form offers it first"),
		newImageStatusCmd("uncertify", "uncertified", "Take an image's certification back (admins)"),
		newImageStatusCmd("deprecate", "deprecated", "Deprecate an image (admins): new jobs are refused it, running ones go on"),
	)
	return cmd
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
