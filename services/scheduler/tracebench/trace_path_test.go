package tracebench

import (
	"os"
	"path/filepath"
	"testing"
)

// traceDir is where the shared trace lives, relative to this package.
const traceDir = "../../../../shared/traces/alibaba-gpu-v2023/csv"

// loadTrace reads the node list and one pod list, skipping the test when the shared
// trace is absent (it is never copied into the repository).
func loadTrace(tb testing.TB, name string) ([]TraceNode, []TracePod) {
	tb.Helper()
	nodesPath := filepath.Join(traceDir, "openb_node_list_gpu_node.csv")
	if _, err := os.Stat(nodesPath); err != nil {
		tb.Skipf("SKIP: Alibaba GPU trace not found at %s (it lives in ../shared, outside the repository): %v", traceDir, err)
	}
	nodes, err := ReadNodesFile(nodesPath)
	if err != nil {
		tb.Fatal(err)
	}
	pods, err := ReadPodsFile(filepath.Join(traceDir, "openb_pod_list_"+name+".csv"))
	if err != nil {
		tb.Fatal(err)
	}
	return nodes, pods
}
