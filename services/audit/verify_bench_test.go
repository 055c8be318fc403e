package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// BenchmarkVerify verifies a chain of one million events. Its baseline, read, walks the
// same rows in the same batches without hashing: the difference is the cost of the checks.
//
//	go test -run '^$' -bench Verify -benchtime 1x ./services/audit/
func BenchmarkVerify(b *testing.B) {
	const events = 1_000_000
	for _, be := range storetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			st := storetest.Open(b, be.Config(b))
			log := audit.New(st, newClock().now)
			seed(b, log, events)
			ctx := context.Background()
			b.Run("read", func(b *testing.B) {
				for b.Loop() {
					var after, n int64
					for {
						page, err := st.AuditEventsAfter(ctx, store.AuditFilter{}, after, 5000)
						if err != nil {
							b.Fatal(err)
						}
						n += int64(len(page))
						if len(page) < 5000 {
							break
						}
						after = page[len(page)-1].ID
					}
					if n != events {
						b.Fatalf("read %d events, want %d", n, events)
					}
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
			b.Run("verify", func(b *testing.B) {
				for b.Loop() {
					r, err := log.Verify(ctx)
					if err != nil || r.Events != events {
						b.Fatalf("verify: %+v %v", r, err)
					}
				}
				b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		})
	}
}

// seed appends n chained events in large transactions.
func seed(b *testing.B, log *audit.Log, n int) {
	b.Helper()
	const chunk = 10_000
	entries := make([]audit.Entry, chunk)
	for done := 0; done < n; done += chunk {
		for i := range entries {
			p := int64(i%5 + 1)
			entries[i] = audit.Entry{Action: "job.submitted", ObjectType: "job", ObjectID: fmt.Sprint(done + i), ProjectID: &p,
				Detail: map[string]int{"gpus": i % 8}}
		}
		if err := log.AppendAll(as(fmt.Sprint("user", done%7)), entries); err != nil {
			b.Fatal(err)
		}
	}
}
