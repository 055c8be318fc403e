package web_test

import (
	"os"
	"testing"

	"github.com/gantry-gpu/gantry/services/agent"
)

// shimArg marks the test binary started as the job supervisor of the agents that
// browser tests run: they start it as `<test binary> shimArg DIR`. An argument, not an
// environment variable, which every child would inherit: the workers of `go test
// -fuzz` too, which would then start as supervisors.
const shimArg = "gantry-web-test-shim"

func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == shimArg {
		os.Exit(agent.RunShim(os.Args[2]))
	}
	os.Exit(m.Run())
}
