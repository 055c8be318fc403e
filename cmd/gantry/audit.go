package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
)

func newAuditCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify and export the hash-chained audit log",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAuditVerifyCmd(g), newAuditExportCmd(g))
	return cmd
}

func newAuditVerifyCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var expect []string
	var anchorsFile string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Walk the audit chain; exit 1 naming the first event that was altered, removed or reordered",
		Long: `Walk the audit chain from the first event to the last, recomputing every hash.

Exits 0 and prints the number of events and the head: the newest event's id and hash
as ID:HASH. A chain whose newest events were cut off still verifies on its own, so
record the head elsewhere (gantry serve also writes it to its log, "audit anchor",
every --audit-anchor-every) and give it back later with --expect-head ID:HASH, or
--anchors FILE for a file of them (any text: a saved server log does). Exits 1 naming
the first event that was altered, that follows an event that was removed or
reordered, or that an anchor names and the log no longer holds as it was.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			anchors, err := verifyAnchors(expect, anchorsFile)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := audit.New(st, time.Now).Verify(ctx, anchors...)
			var br *audit.Break
			if errors.As(err, &br) {
				return fmt.Errorf("%w (%d events before it verified)", br, r.Events)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if r.Events == 0 {
				fmt.Fprintln(out, "audit log is empty")
				return nil
			}
			fmt.Fprintf(out, "audit log intact: %d events, newest %d, head hash %s\n", r.Events, r.LastID, r.Head)
			if len(anchors) > 0 {
				fmt.Fprintf(out, "every one of %d anchors holds\n", len(anchors))
			}
			fmt.Fprintf(out, "head: %d:%s (record it elsewhere; --expect-head catches a cut-off tail later)\n", r.LastID, r.Head)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&expect, "expect-head", nil, "an anchor recorded earlier, ID:HASH as verify prints it: fail unless that event is still in the chain with that hash (repeatable)")
	cmd.Flags().StringVar(&anchorsFile, "anchors", "", "a file of anchors, ID:HASH anywhere on a line (the \"audit anchor\" lines of a saved server log do)")
	db.addFlags(cmd)
	return cmd
}

// verifyAnchors reads the anchors of --expect-head and --anchors.
func verifyAnchors(expect []string, file string) ([]audit.Anchor, error) {
	var out []audit.Anchor
	for _, s := range expect {
		a, err := audit.ParseAnchor(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--expect-head: %w", err)}
		}
		out = append(out, a)
	}
	if file == "" {
		return out, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("--anchors: %w", err)}
	}
	defer f.Close()
	more, err := audit.ReadAnchors(f)
	switch {
	case err != nil:
		return nil, usageError{fmt.Errorf("--anchors %s: %w", file, err)}
	case len(more) == 0:
		return nil, usageError{fmt.Errorf("--anchors %s: no anchor (ID:HASH) in the file", file)}
	}
	return append(out, more...), nil
}

func newAuditExportCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var q audit.Query
	var output string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write audit events as JSON Lines (one event per line, oldest first) for a SIEM",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := db.open(cmd, g)
			if err != nil {
				return err
			}
			defer st.Close()
			al := audit.New(st, time.Now)
			f, err := al.Filter(ctx, q)
			var fe *models.FieldError
			if errors.As(err, &fe) {
				return usageError{fmt.Errorf("--%s: %s", fe.Field, fe.Message)}
			}
			if err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			if output != "" {
				file, err := os.OpenFile(output, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("create --output file: %w", err)
				}
				defer file.Close()
				w = file
			}
			n, err := al.Export(ctx, w, f)
			if err != nil {
				return err
			}
			if output != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "exported %d events to %s\n", n, output)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&q.Actor, "actor", "", "only events by this actor (username, node or system)")
	fl.StringVar(&q.Action, "action", "", "only events of this action, e.g. login.failed")
	fl.StringVar(&q.Project, "project", "", "only events in this project (name)")
	fl.StringVar(&q.Since, "since", "", "only events at or after this date (2026-03-01) or time (RFC 3339)")
	fl.StringVar(&q.Until, "until", "", "only events before this time; a date means up to the end of that day")
	fl.StringVar(&output, "output", "", "write to this file (mode 0600) instead of standard output")
	db.addFlags(cmd)
	return cmd
}
