package identity_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// BenchmarkSignIn is what every signed-in request spends finding its caller: a browser
// session, and an API token, looked up on SQLite and PostgreSQL. It reports the CPU per
// lookup (this process's; on PostgreSQL the server's is not in it), which a shared
// machine changes less than the time.
//
//	go test ./services/identity/ -run '^$' -bench BenchmarkSignIn
func BenchmarkSignIn(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b, storetest.Open(b, backend.Config(b)), identity.Options{})
			if _, err := e.id.Bootstrap(ctx); err != nil {
				b.Fatal(err)
			}
			admin, err := e.st.UserByUsername(ctx, identity.AdminUser)
			if err != nil {
				b.Fatal(err)
			}
			cookie, _, err := e.id.StartSession(ctx, admin, "", "bench")
			if err != nil {
				b.Fatal(err)
			}
			token, _, err := e.id.CreateToken(ctx, admin, "bench", identity.ScopeRead, 24*time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name   string
				signIn func() (*identity.Principal, error)
			}{
				{"session", func() (*identity.Principal, error) { return e.id.Session(ctx, cookie) }},
				{"token", func() (*identity.Principal, error) { return e.id.Token(ctx, token) }},
			} {
				b.Run(c.name, func(b *testing.B) {
					began := processCPU(b)
					for b.Loop() {
						if p, err := c.signIn(); err != nil || p.User.ID != admin.ID {
							b.Fatalf("sign in: %+v, %v", p, err)
						}
					}
					b.ReportMetric(float64((processCPU(b)-began).Microseconds())/float64(b.N), "cpu-µs/op")
				})
			}
		})
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
