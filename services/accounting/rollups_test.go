package accounting_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Roll-ups of the known history by every dimension, labelled, and their CSV.
func TestRollupsOfKnownHistory(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHistory(t, s)
		formula := h.job("=SUM(A1)", "ada", "detect", "")
		h.alloc(formula, "l4", `[{"uuid":"l4-0","milli":500}]`, 0, 0, 0, at(3, 0), tp(at(3, 30)))
		h.meter(at(4, 10))
		day := accounting.Query{From: t0, To: t0.AddDate(0, 0, 1)}
		cases := []struct {
			q    accounting.Query
			want string
		}{
			// The formula job adds 0.25 GPU-hour of spot L4 at 1.20 = 0.30 to vision.
			{accounting.Query{By: "team", ChargedOnly: true}, "audio=16.213699 vision=16.160000"},
			{accounting.Query{By: "user", ChargedOnly: true}, "bob=16.213699 ada=16.160000"},
			{accounting.Query{By: "gpu_model", Resources: []string{"gpu"}}, "A100-80GB=70.000000 L4-24GB=4.800000"},
			{accounting.Query{By: "pool"}, "ondemand=71.860000 spot=4.813699"},
			{accounting.Query{By: "image", ChargedOnly: true}, "no image=27.373699 matlab=5.000000"},
			{accounting.Query{By: "team", Resources: []string{"gpu"}}, "unallocated=44.300000 audio=16.200000 vision=14.300000"},
			{accounting.Query{By: "project", ChargedOnly: true, Limit: 1}, "speech=16.213699"},
			{accounting.Query{Bucket: "week"}, "2026-03-02=76.673699"},
		}
		for _, c := range cases {
			c.q.From, c.q.To = day.From, day.To
			rows, err := h.acc.Rollup(h.ctx, c.q)
			if err != nil {
				t.Fatalf("%+v: %v", c.q, err)
			}
			var got []string
			for _, r := range rows {
				label := r.Label
				if label == "" {
					label = r.Bucket.Format("2006-01-02")
				}
				got = append(got, label+"="+accounting.FormatMicros(r.AmountMicros))
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("by %q per %q = %q, want %q", c.q.By, c.q.Bucket, strings.Join(got, " "), c.want)
			}
		}

		q := accounting.Query{By: "gpu_model", Bucket: "day", Resources: []string{"gpu"}, From: day.From, To: day.To}
		rows, err := h.acc.Rollup(h.ctx, q)
		must(t, err)
		var buf bytes.Buffer
		must(t, accounting.WriteCSV(&buf, q, rows, "EUR"))
		want := "day,gpu_model_key,gpu_model,quantity_gpu-hour,amount,currency\n" +
			"2026-03-02,,A100-80GB,8.000,70.000000,EUR\n" +
			"2026-03-02,,L4-24GB,4.000,4.800000,EUR\n"
		if buf.String() != want {
			t.Errorf("CSV =\n%s\nwant\n%s", buf.String(), want)
		}

		q = accounting.Query{By: "job", ChargedOnly: true, From: day.From, To: day.To}
		rows, err = h.acc.Rollup(h.ctx, q)
		must(t, err)
		buf.Reset()
		must(t, accounting.WriteCSV(&buf, q, rows, "EUR"))
		if line := fmt.Sprintf("%d,'=SUM(A1) (#%d),0.300000,EUR\n", formula.ID, formula.ID); !strings.Contains(buf.String(), line) {
			t.Errorf("CSV by job lacks %q (a name that looks like a formula is quoted):\n%s", line, buf.String())
		}
	})
}

func TestRollupRefusesBadQueries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		cases := []struct {
			q     accounting.Query
			field string
		}{
			{accounting.Query{By: "colour", From: t0, To: t0.AddDate(0, 0, 1)}, "by"},
			{accounting.Query{Bucket: "fortnight", From: t0, To: t0.AddDate(0, 0, 1)}, "bucket"},
			{accounting.Query{Resources: []string{"tpu"}, From: t0, To: t0.AddDate(0, 0, 1)}, "resource"},
			{accounting.Query{From: t0}, "from"},
			{accounting.Query{From: t0, To: t0}, "to"},
			{accounting.Query{From: t0, To: t0.AddDate(6, 0, 0)}, "to"},
			{accounting.Query{By: "team", Bucket: "day", Limit: 5, From: t0, To: t0.AddDate(0, 0, 1)}, "limit"},
		}
		for _, c := range cases {
			_, err := w.acc.Rollup(w.ctx, c.q)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Errorf("%+v: %v, want a %s error", c.q, err, c.field)
			}
		}
	})
}
