package slurm

import (
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"node1", "node1"},
		{"node[01-03,07],gpu5", "node01 node02 node03 node07 gpu5"},
		{"rack[1-2]-n[8-9]", "rack1-n8 rack1-n9 rack2-n8 rack2-n9"},
		{"n[9-11]", "n9 n10 n11"},
		{"(null)", ""},
		{"", ""},
	} {
		got, err := ExpandHostlist(c.in)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"node[1-", "node]1", "node[3-1]", "node[a-b]", "n[1-99999999]", "a,,b", "n[1-70000]"} {
		if got, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q) = %q, want an error", bad, got)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"node[01-03,07],gpu5", "rack[1-2]-n[8-9]", "n[", "x[1-3][4-6]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err == nil && len(hosts) > maxHosts {
			t.Fatalf("%q expanded to %d hosts", s, len(hosts))
		}
	})
}
