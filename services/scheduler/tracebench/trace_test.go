package tracebench

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReadNodes(t *testing.T) {
	nodes, err := ReadNodes("nodes.csv", strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\nn-b,96000,393216,8,G2\nn-a,32000,262144,0,\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceNode{{"n-b", 96000, 393216, 8, "G2"}, {"n-a", 32000, 262144, 0, ""}}
	if !slices.Equal(nodes, want) {
		t.Fatalf("nodes = %+v, want %+v", nodes, want)
	}
}

func TestReadNodesErrorsNameTheLine(t *testing.T) {
	header := "sn,cpu_milli,memory_mib,gpu,model\n"
	cases := []struct {
		name, in, want string
	}{
		{"empty file", "", "nodes.csv:1: empty file, want a header line"},
		{"missing columns", "sn,cpu_milli\nn1,1\n", "nodes.csv:1: header lacks column(s) gpu, memory_mib, model"},
		{"cpu not an integer", header + "n1,96000,1,8,G2\nn2,lots,1,8,G2\n", `nodes.csv:3: column cpu_milli: "lots" is not an integer`},
		{"negative gpu count", header + "n1,96000,1,-2,G2\n", "nodes.csv:2: column gpu: -2 is out of range; allowed: 0..64"},
		{"GPUs without a model", header + "n1,96000,1,2,\n", `nodes.csv:2: column model: node "n1" has 2 GPUs but no model`},
		{"duplicate node", header + "n1,1,1,0,\nn1,1,1,0,\n", `nodes.csv:3: column sn: node "n1" already defined on line 2`},
		{"short row", header + "n1,96000,1\n", "nodes.csv:2: column gpu: missing value (row has 3 fields)"},
		{"unbalanced quote", header + "\"n1,1,1,0,\n", "nodes.csv:2:"},
		{"no rows", header, "nodes.csv: no nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadNodes("nodes.csv", strings.NewReader(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
	t.Run("errors are typed with the line", func(t *testing.T) {
		_, err := ReadNodes("nodes.csv", strings.NewReader(header+"n1,x,1,0,\n"))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || le.Column != "cpu_milli" {
			t.Fatalf("err = %#v", err)
		}
	})
}

func TestReadPods(t *testing.T) {
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n" +
		"p1,12000,16384,1,1000,,LS\n" +
		"p2,6000,12288,1,460,V100M16|V100M32,LS\n" +
		"p3,4000,100,2,1200,nan,BE\n" +
		"p4,8000,100,0,500,,BE\n" +
		"p5,4.0,100,0,0,,BE\n"
	pods, err := ReadPods("pods.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []TracePod{
		{Name: "p1", CPUMilli: 12000, MemoryMiB: 16384, Num: 1, Milli: 1000},
		{Name: "p2", CPUMilli: 6000, MemoryMiB: 12288, Num: 1, Milli: 460, Spec: []string{"V100M16", "V100M32"}},
		{Name: "p3", CPUMilli: 4000, MemoryMiB: 100, Num: 2, Milli: 1000},
		{Name: "p4", CPUMilli: 8000, MemoryMiB: 100},
		{Name: "p5", CPUMilli: 4, MemoryMiB: 100},
	}
	if !slices.EqualFunc(pods, want, func(a, b TracePod) bool {
		return a.Name == b.Name && a.CPUMilli == b.CPUMilli && a.MemoryMiB == b.MemoryMiB && a.Num == b.Num && a.Milli == b.Milli && slices.Equal(a.Spec, b.Spec)
	}) {
		t.Fatalf("pods = %+v\nwant %+v", pods, want)
	}
	if !pods[1].Sharing() || pods[0].Sharing() || pods[2].GPUDemand() != 2000 {
		t.Fatal("sharing or demand wrong")
	}
	t.Run("columns after gpu_milli are optional", func(t *testing.T) {
		pods, err := ReadPods("p.csv", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,500\n"))
		if err != nil || len(pods) != 1 || pods[0].Spec != nil {
			t.Fatalf("pods %+v err %v", pods, err)
		}
	})
	cases := []struct {
		name, in, want string
	}{
		{"GPU pod without a share", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,0\n", `p.csv:2: column gpu_milli: pod "p" asks for 2 GPUs with gpu_milli 0; allowed: 1..1000`},
		{"fractional value", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,0.5\n", `p.csv:2: column gpu_milli: "0.5" is not an integer`},
		{"missing name column", "cpu_milli,memory_mib,num_gpu,gpu_milli\n1,1,1,1\n", "p.csv:1: header lacks column(s) name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPods("p.csv", strings.NewReader(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want []int64
		err  bool
	}{
		{"42-51", []int64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}, false},
		{"42", []int64{42}, false},
		{"42,45, 50-51", []int64{42, 45, 50, 51}, false},
		{"51-42", nil, true},
		{"x", nil, true},
		{"1-100000", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseSeeds(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// The pod list's QoS and creation and deletion times, which the fleet simulation replays.
func TestReadPodTimes(t *testing.T) {
	header := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	pods, err := ReadPods("pods.csv", strings.NewReader(header+"p0,12000,16384,1,1000,,LS,Running,0,12537496,0\np1,6000,12288,1,460,,BE,Running,427061,12902960,427061\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pods[0].QoS != "LS" || pods[0].Created != 0 || pods[0].Deleted != 12537496 || pods[1].QoS != "BE" || pods[1].Created != 427061 {
		t.Fatalf("pods %+v", pods)
	}
	for in, want := range map[string]string{
		header + "p0,1,1,0,0,,BE,Running,10,5,\n":                                  `pods.csv:2: column deletion_time: pod "p0" is deleted at 5, before its creation at 10`,
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,0,0,3\n": "pods.csv:1: header has creation_time but no deletion_time",
	} {
		if _, err := ReadPods("pods.csv", strings.NewReader(in)); err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}
