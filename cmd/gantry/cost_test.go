package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// gantry cost report sums a known ledger by team, as a table and as CSV, on both databases.
func TestCostReport(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ctx := context.Background()
			acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := acc.CreateRate(ctx, models.CostRate{Resource: "egress", RateMicros: 250_000, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"vision", "audio"} {
				team := &models.Team{Name: name}
				if err := st.CreateTeam(ctx, team); err != nil {
					t.Fatal(err)
				}
				p := &models.Project{TeamID: team.ID, Name: name + "-main"}
				if err := st.CreateProject(ctx, p); err != nil {
					t.Fatal(err)
				}
				for day := 1; day <= 3; day++ { // vision 4 GiB a day (1.00), audio 8 GiB (2.00), 1-3 March
					at := time.Date(2026, 3, day, 10, 0, 0, 0, time.UTC)
					_, err := acc.RecordUsage(ctx, accounting.Usage{Resource: "egress", ProjectID: p.ID, Bytes: int64(4*(i+1)) << 30, From: at, To: at.Add(time.Hour)})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			args := append([]string{"cost", "report", "--by", "team", "--from", "2026-03-01", "--to", "2026-03-02"}, dbArgs(cfg)...)
			out, stderr, code := gantry(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want := []string{"    TEAM  AMOUNT (USD)", "   audio      4.000000", "  vision      2.000000", "   total      6.000000"}
			if got := strings.Split(strings.TrimRight(out, "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("table =\n%s\nwant\n%s", out, strings.Join(want, "\n"))
			}
			args = append([]string{"cost", "report", "--by", "", "--bucket", "day", "--format", "csv", "--from", "2026-03-01", "--to", "2026-03-31"}, dbArgs(cfg)...)
			out, stderr, code = gantry(t, nil, args...)
			if want := "day,amount,currency\n2026-03-01,3.000000,USD\n2026-03-02,3.000000,USD\n2026-03-03,3.000000,USD\n"; code != 0 || out != want {
				t.Errorf("csv: exit %d, %q (%s), want %q", code, out, stderr, want)
			}
			for _, c := range []struct{ args, says string }{
				{"--by colour", `--by: "colour" is not one of team, project`},
				{"--from 2026-3-1", `--from "2026-3-1": want a day as YYYY-MM-DD`},
				{"--from 2026-03-05 --to 2026-03-01", "--to: 2026-03-01 is before from (2026-03-05)"},
				{"--format xml", `--format "xml": want table or csv`},
			} {
				_, stderr, code := gantry(t, nil, append(append([]string{"cost", "report"}, strings.Fields(c.args)...), dbArgs(cfg)...)...)
				if code != 2 || !strings.Contains(stderr, c.says) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%s: exit %d, stderr %q; want 2 and one line saying %q", c.args, code, stderr, c.says)
				}
			}
		})
	}
}
