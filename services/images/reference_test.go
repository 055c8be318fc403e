package images

import (
	"strings"
	"testing"
)

func TestParseReference(t *testing.T) {
	good := []struct {
		in                  string
		registry, repo, tag string
		digestPrefix        string
	}{
		{"ubuntu", "", "ubuntu", "", ""},
		{"pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "", "pytorch/pytorch", "2.5.1-cuda12.4-cudnn9-runtime", ""},
		{"nvcr.io/nvidia/pytorch:24.10-py3", "nvcr.io", "nvidia/pytorch", "24.10-py3", ""},
		{"localhost:5000/team/train:v1", "localhost:5000", "team/train", "v1", ""},
		{"localhost/train", "localhost", "train", "", ""},
		{"ghcr.io/org/jax@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "ghcr.io", "org/jax", "", "sha256:0123"},
		{"registry.example.com:443/a/b/c:tag@sha256:0123456789abcdef0123456789abcdef", "registry.example.com:443", "a/b/c", "tag", "sha256:"},
	}
	for _, g := range good {
		r, err := ParseReference(g.in)
		if err != nil {
			t.Errorf("%q: %v", g.in, err)
			continue
		}
		if r.Registry != g.registry || r.Repository != g.repo || r.Tag != g.tag || !strings.HasPrefix(r.Digest, g.digestPrefix) {
			t.Errorf("%q parsed as %+v", g.in, r)
		}
		if r.String() != g.in {
			t.Errorf("%q renders back as %q", g.in, r.String())
		}
	}
	bad := map[string]string{
		"":                         "empty",
		"Ubuntu":                   "repository part",
		"nvcr.io/nvidia/PyTorch:1": "repository part",
		"ubuntu:":                  "tag",
		"ubuntu:-x":                "tag",
		"ubuntu@sha256:zz":         "digest",
		"a//b":                     "repository part",
		"my_registry:5000/x":       "registry",
		strings.Repeat("a", 600):   "at most 512",
		"ubuntu:latest extra":      "tag",
	}
	for in, want := range bad {
		if _, err := ParseReference(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one mentioning %q", in, err, want)
		}
	}
}

func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"ubuntu", "nvcr.io/nvidia/pytorch:24.10-py3", "a@sha256:00", "[::1]:5000/x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReference(s)
		if err != nil {
			return
		}
		again, err := ParseReference(r.String())
		if err != nil || again != r {
			t.Fatalf("%q -> %+v does not round-trip: %+v %v", s, r, again, err)
		}
	})
}
