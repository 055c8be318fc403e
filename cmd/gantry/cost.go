package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
)

func newCostCmd(g *globalOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Report what GPUs and the rest cost, from the metered ledger",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCostReportCmd(g))
	return cmd
}

func newCostReportCmd(g *globalOpts) *cobra.Command {
	var db dbOpts
	var by, bucket, from, to, format string
	var resources []string
	var charged bool
	var limit int
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Sum the ledger by team, project, user, pool, GPU model, image, job or resource",
		Long: `Sum the metered ledger between two days (UTC, both included), grouped by a dimension
and optionally per day, ISO week or month. Amounts are in the configured currency with
six exact decimals; "unallocated" is the cost of GPUs no job held.

  gantry cost report --by team --from 2026-03-01 --to 2026-03-31
  gantry cost report --by gpu_model --bucket week --resource gpu --format csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := accounting.Query{By: by, Bucket: bucket, Resources: resources, ChargedOnly: charged, Limit: limit}
			var err error
			if q.From, err = parseDay("--from", from); err != nil {
				return err
			}
			last, err := parseDay("--to", to)
			if err != nil {
				return err
			}
			q.To = last.AddDate(0, 0, 1)
			if format != "table" && format != "csv" {
				return usageError{fmt.Errorf("--format %q: want table or csv", format)}
			}
			log, err := g.newLogger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := db.openStore(ctx, log)
			if err != nil {
				return err
			}
			defer st.Close()
			acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
			if err != nil {
				return err
			}
			rows, err := acc.Rollup(ctx, q)
			var fe *models.FieldError
			if errors.As(err, &fe) {
				return usageError{fmt.Errorf("--%s: %s", strings.ReplaceAll(fe.Field, "_", "-"), fe.Message)}
			}
			if err != nil {
				return err
			}
			if format == "csv" {
				return accounting.WriteCSV(cmd.OutOrStdout(), q, rows)
			}
			return writeCostTable(cmd.OutOrStdout(), q, rows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&by, "by", "team", "group by team, project, user, pool, gpu_model, image, job or resource; empty for one total")
	f.StringVar(&bucket, "bucket", "", "time grain: day, week or month; empty for one total per key")
	f.StringVar(&from, "from", time.Now().UTC().Format("2006-01")+"-01", "first day included (YYYY-MM-DD, UTC)")
	f.StringVar(&to, "to", time.Now().UTC().Format(time.DateOnly), "last day included (YYYY-MM-DD, UTC)")
	f.StringSliceVar(&resources, "resource", nil, "only these resources (gpu, cpu, ram, scratch, storage, egress, license); repeatable")
	f.BoolVar(&charged, "charged-only", false, "leave out unallocated capacity")
	f.IntVar(&limit, "limit", 0, "keep the N most expensive keys (without --bucket)")
	f.StringVar(&format, "format", "table", "table or csv")
	db.addFlags(cmd)
	return cmd
}

func parseDay(flag, s string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, usageError{fmt.Errorf("%s %q: want a day as YYYY-MM-DD", flag, s)}
	}
	return d, nil
}

// writeCostTable prints rows in aligned columns with a total line.
func writeCostTable(w io.Writer, q accounting.Query, rows []accounting.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	if q.Bucket != "" {
		head = append(head, strings.ToUpper(q.Bucket))
	}
	if q.By != "" {
		head = append(head, strings.ToUpper(strings.ReplaceAll(q.By, "_", " ")))
	}
	fmt.Fprintln(tw, strings.Join(append(head, "AMOUNT"), "\t")+"\t")
	var total int64
	for _, r := range rows {
		var cells []string
		if q.Bucket != "" {
			cells = append(cells, r.Bucket.Format(time.DateOnly))
		}
		if q.By != "" {
			cells = append(cells, r.Label)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, accounting.FormatMicros(r.AmountMicros)), "\t")+"\t")
		total += r.AmountMicros
	}
	pad := make([]string, len(head))
	if len(pad) > 0 {
		pad[0] = "total"
	}
	if len(pad) == 0 {
		return tw.Flush()
	}
	fmt.Fprintln(tw, strings.Join(append(pad, accounting.FormatMicros(total)), "\t")+"\t")
	return tw.Flush()
}
