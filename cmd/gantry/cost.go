package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
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
		Short: "What GPUs and the rest cost, from the metered ledger",
		Long: `What GPUs and the rest cost, from the metered ledger.

  gantry cost show    asks a Gantry server (after gantry login), as the cost page does:
                      anyone with an API token, each seeing what their role shows them
  gantry cost report  reads the database itself (--data-dir or --database-url): for
                      admins and operators on the server's host, also with the server down`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCostShowCmd(), newCostReportCmd(g))
	return cmd
}

func newCostShowCmd() *cobra.Command {
	var o clientOpts
	var by, bucket, from, to, resource string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Sum the cost you may see by team, project, user, pool, GPU model, image, job or resource (from a server)",
		Long: `Sum the metered ledger between two days (UTC, both included) as GET /api/v1/cost
answers it, grouped by a dimension and optionally per day, ISO week or month. Admins
and auditors see every team and the cost of GPUs no job held ("unallocated"); others
the projects where they may read cost, which are named on stderr.

  gantry cost show --by project --from 2026-03-01 --to 2026-03-31
  gantry cost show --by user --bucket week --resource gpu -o json

gantry cost report reads the database directly instead, on the server's host.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{"by": {by}, "bucket": {bucket}}
			for name, v := range map[string]string{"from": from, "to": to, "resource": resource} {
				if v != "" {
					q.Set(name, v)
				}
			}
			var out struct {
				By       string   `json:"by"`
				Bucket   string   `json:"bucket"`
				All      bool     `json:"all"`
				Projects []string `json:"projects"`
				Currency string   `json:"currency"`
				NoRates  bool     `json:"no_rates"`
				Rows     []struct {
					Bucket       string `json:"bucket"`
					Label        string `json:"label"`
					AmountMicros int64  `json:"amount_micros"`
				} `json:"rows"`
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/cost", q, &out)
			if err != nil {
				return fmt.Errorf("show cost: %w", err)
			}
			switch {
			case out.All:
			case len(out.Projects) == 0:
				fmt.Fprintln(cmd.ErrOrStderr(), "You may read the cost of no project.")
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "Covers the projects where you may read cost: %s.\n", strings.Join(out.Projects, ", "))
			}
			if out.NoRates {
				fmt.Fprintln(cmd.ErrOrStderr(), "No cost rates are set, so nothing is charged: an admin sets them on the portal's rates page (/admin/cost/rates).")
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			rows := make([]accounting.Row, len(out.Rows))
			for i, r := range out.Rows {
				rows[i] = accounting.Row{Label: r.Label, AmountMicros: r.AmountMicros}
				if r.Bucket != "" {
					if rows[i].Bucket, err = time.Parse(time.DateOnly, r.Bucket); err != nil {
						return fmt.Errorf("show cost: the server's bucket %q: %w", r.Bucket, err)
					}
				}
			}
			return writeCostTable(cmd.OutOrStdout(), accounting.Query{By: out.By, Bucket: out.Bucket}, rows, out.Currency)
		},
	}
	o.addFlags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&by, "by", "team", "group by team, project, user, pool, gpu_model, image, job or resource; empty for one total")
	f.StringVar(&bucket, "bucket", "", "time grain: day, week or month; empty for one total per key")
	f.StringVar(&from, "from", "", "first day included (YYYY-MM-DD, UTC; default: the first of this month)")
	f.StringVar(&to, "to", "", "last day included (YYYY-MM-DD, UTC; default: today)")
	f.StringVar(&resource, "resource", "", "one resource only: gpu, cpu, ram, scratch, storage, egress or license")
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
		Short: "Sum the whole ledger by team, project, user, pool, GPU model, image, job or resource (from the database)",
		Long: `Sum the metered ledger between two days (UTC, both included), grouped by a dimension
and optionally per day, ISO week or month. Amounts are in the configured currency with
six exact decimals; "unallocated" is the cost of GPUs no job held.

It reads the database directly (--data-dir or --database-url), every team's cost, so
it serves admins and operators on the server's host, with the server running or not.
Anyone else asks a server: gantry cost show.

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
			ctx := cmd.Context()
			st, err := db.open(cmd, g)
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
			cur, err := acc.Currency(ctx)
			if err != nil {
				return err
			}
			if format == "csv" {
				return accounting.WriteCSV(cmd.OutOrStdout(), q, rows, cur)
			}
			return writeCostTable(cmd.OutOrStdout(), q, rows, cur)
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

// writeCostTable prints rows in aligned columns with a total line, the amount's
// heading naming currency (a server older than the currency names none).
func writeCostTable(w io.Writer, q accounting.Query, rows []accounting.Row, currency string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	if q.Bucket != "" {
		head = append(head, strings.ToUpper(q.Bucket))
	}
	if q.By != "" {
		head = append(head, strings.ToUpper(strings.ReplaceAll(q.By, "_", " ")))
	}
	amount := "AMOUNT"
	if currency != "" {
		amount += " (" + currency + ")"
	}
	fmt.Fprintln(tw, strings.Join(append(head, amount), "\t")+"\t")
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
