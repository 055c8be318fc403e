package web_test

import (
	"os"
	"testing"

	"github.com/gantry-gpu/gantry/services/agent"
)

const shimEnv = "GANTRY_WEB_TEST_SHIM"

// TestMain lets the test binary be the job supervisor of the agents that browser tests
// run: the agent starts it as `<test binary> DIR` with shimEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(shimEnv) == "1" {
		os.Exit(agent.RunShim(os.Args[len(os.Args)-1]))
	}
	os.Setenv(shimEnv, "1")
	os.Exit(m.Run())
}
