package scheduler

import "testing"

func TestCheckers(t *testing.T) {
	base := gpuNode("n1", "A100", 2, 40960, 16000, 64<<10)
	base.Labels = map[string]string{"zone": "a", "ib": "yes"}
	cordoned := base
	cordoned.Cordoned = true
	spot := base
	spot.Spot = true
	other := base
	other.Pool = "batch"
	eu := base
	eu.Region, eu.Confidential = "eu-west", true
	plain := base
	plain.Runs = RunsPlain
	boxes := base
	boxes.Runs = RunsContainers
	whole := base
	whole.WholeGPUs = true

	cases := []struct {
		name string
		c    checker
		node Node
		want reason
	}{
		{"cordoned node rejected", cordonChecker{}, cordoned, reasonCordoned},
		{"ready node passes cordon check", cordonChecker{}, base, reasonNone},
		{"process node takes a plain command", runtimeChecker{container: false}, plain, reasonNone},
		{"process node refuses a container image", runtimeChecker{container: true}, plain, reasonRuntime},
		{"container node takes a container image", runtimeChecker{container: true}, boxes, reasonNone},
		{"container node refuses a plain command", runtimeChecker{container: false}, boxes, reasonRuntime},
		{"a node that runs both takes a plain command", runtimeChecker{container: false}, base, reasonNone},
		{"a node that runs both takes a container image", runtimeChecker{container: true}, base, reasonNone},
		{"pool matches", poolChecker{"default"}, base, reasonNone},
		{"other pool rejected", poolChecker{"default"}, other, reasonPool},
		{"selector subset matches", selectorChecker{map[string]string{"zone": "a"}}, base, reasonNone},
		{"selector value differs", selectorChecker{map[string]string{"zone": "b"}}, base, reasonSelector},
		{"selector label missing", selectorChecker{map[string]string{"gpu-arch": ""}}, base, reasonSelector},
		{"allowed pool passes the policy", placementChecker{Policy{Pools: []string{"batch", "default"}}}, base, reasonNone},
		{"pool outside the policy", placementChecker{Policy{Pools: []string{"batch"}}}, base, reasonPlacement},
		{"region outside the policy", placementChecker{Policy{Regions: []string{"eu-west"}}}, base, reasonPlacement},
		{"allowed region passes", placementChecker{Policy{Regions: []string{"eu-west"}}}, eu, reasonNone},
		{"confidential only rejects a plain node", placementChecker{Policy{ConfidentialOnly: true}}, base, reasonPlacement},
		{"confidential only takes a confidential node", placementChecker{Policy{ConfidentialOnly: true, Regions: []string{"eu-west"}}}, eu, reasonNone},
		{"a node giving whole GPUs only refuses a share", wholeChecker{}, whole, reasonWholeGPUs},
		{"a node that shares GPUs passes", wholeChecker{}, base, reasonNone},
		{"spot node rejected for on-demand job", spotChecker{}, spot, reasonSpot},
		{"on-demand node passes spot check", spotChecker{}, base, reasonNone},
		{"cpu fits exactly", resourceChecker{cpu: 16000}, base, reasonNone},
		{"cpu short by one milli-core", resourceChecker{cpu: 16001}, base, reasonCPU},
		{"ram short", resourceChecker{ram: 64<<10 + 1}, base, reasonRAM},
		{"scratch short", resourceChecker{scratch: 1<<20 + 1}, base, reasonScratch},
		{"cpu checked before ram", resourceChecker{cpu: 99999, ram: 99 << 20}, base, reasonCPU},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newTestCluster(t, Snapshot{Nodes: []Node{tc.node}})
			if got := tc.c.check(&c.nodes[0]); got != tc.want {
				t.Fatalf("check = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeCheckersFollowRequest(t *testing.T) {
	cases := []struct {
		name string
		req  Request
		want int
	}{
		{"plain request checks cordon, runtime, spot and resources", Request{}, 4},
		{"spot allowed drops the spot check", Request{SpotAllowed: true}, 3},
		{"pool and selector add their checks", Request{Pool: "p", NodeSelector: map[string]string{"a": "b"}}, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(nodeCheckers(&demand{req: tc.req})); got != tc.want {
				t.Fatalf("%d checkers, want %d", got, tc.want)
			}
		})
	}
}
