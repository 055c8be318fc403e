package images_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func pytorch() images.Input {
	return images.Input{
		Name: "pytorch-2.5-cuda12.4", Reference: "nvcr.io/nvidia/pytorch:24.10-py3", Framework: "pytorch",
		FrameworkVersion: "2.5.0", CUDAVersion: "12.4", PythonVersion: "3.10", SizeMiB: 9000,
	}
}

func TestAddCertifyDeprecateAudited(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		log := audit.New(st, func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) })
		svc := images.New(st, log)
		ctx := audit.WithActor(context.Background(), audit.Actor{Name: "root", Type: models.ActorUser})

		img, err := svc.Add(ctx, pytorch())
		if err != nil {
			t.Fatal(err)
		}
		if img.Status != models.ImageUncertified {
			t.Errorf("a new image is %s, want uncertified until an admin certifies it", img.Status)
		}
		if _, err := svc.SetStatus(ctx, img.Name, models.ImageCertified); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetPrePull(ctx, img.Name, true); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.SetStatus(ctx, img.Name, models.ImageDeprecated); err != nil {
			t.Fatal(err)
		}
		got, err := st.ImageByName(ctx, img.Name)
		if err != nil || got.Status != models.ImageDeprecated || !got.PrePull {
			t.Fatalf("image after changes = %+v, %v", got, err)
		}
		page, err := log.Events(ctx, store.AuditFilter{Actor: "root"}, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for i := len(page.Events) - 1; i >= 0; i-- {
			actions = append(actions, page.Events[i].Action)
		}
		want := []string{"image.created", "image.certified", "image.prepull_changed", "image.deprecated"}
		if len(actions) != len(want) {
			t.Fatalf("audited %v, want %v", actions, want)
		}
		for i := range want {
			if actions[i] != want[i] {
				t.Fatalf("audited %v, want %v", actions, want)
			}
		}
		if rep, err := log.Verify(ctx); err != nil {
			t.Fatalf("audit chain broken after image changes: %v %+v", err, rep)
		}
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	svc := images.New(st, audit.New(st, time.Now))
	ctx := context.Background()
	cases := map[string]func(*images.Input){
		"name":         func(in *images.Input) { in.Name = "Has Spaces" },
		"reference":    func(in *images.Input) { in.Reference = "nvcr.io/NVIDIA/pytorch" },
		"framework":    func(in *images.Input) { in.Framework = "caffe" },
		"cuda_version": func(in *images.Input) { in.CUDAVersion = "twelve" },
		"min_driver":   func(in *images.Input) { in.MinDriver = "550.x" },
		"size_mib":     func(in *images.Input) { in.SizeMiB = -1 },
		"digest":       func(in *images.Input) { in.Digest = "md5:1" },
	}
	for field, mutate := range cases {
		in := pytorch()
		mutate(&in)
		_, err := svc.Add(ctx, in)
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != field || fe.Message == "" {
			t.Errorf("bad %s: error %v, want a FieldError naming %s", field, err, field)
		}
	}
	if _, err := svc.Add(ctx, pytorch()); err != nil {
		t.Fatal(err)
	}
	var fe *models.FieldError
	if _, err := svc.Add(ctx, pytorch()); !errors.As(err, &fe) || fe.Field != "name" {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := svc.SetStatus(ctx, "pytorch-2.5-cuda12.4", "golden"); !errors.As(err, &fe) || fe.Field != "status" {
		t.Errorf("unknown status: %v", err)
	}
	if _, err := svc.SetStatus(ctx, "nope", models.ImageCertified); !errors.As(err, &fe) || fe.Field != "image" {
		t.Errorf("unknown image: %v", err)
	}
	all, _ := st.Images(ctx)
	if len(all) != 1 || all[0].Status != models.ImageUncertified {
		t.Fatalf("bad input changed the catalog: %+v", all)
	}
}

func TestCatalogSearchAndMatrix(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	svc := images.New(st, audit.New(st, time.Now))
	ctx := context.Background()
	jax := images.Input{Name: "jax-0.4-cuda12.8", Reference: "ghcr.io/nvidia/jax:0.4", Framework: "jax", CUDAVersion: "12.8"}
	old := images.Input{Name: "tf-2.12-cuda11.8", Reference: "tensorflow/tensorflow:2.12.0-gpu", Framework: "tensorflow", CUDAVersion: "11.8"}
	for _, in := range []images.Input{pytorch(), jax, old} {
		if _, err := svc.Add(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.SetStatus(ctx, "jax-0.4-cuda12.8", models.ImageCertified); err != nil {
		t.Fatal(err)
	}
	found, err := svc.Catalog(ctx, store.ImageFilter{Query: "TENSORFLOW"})
	if err != nil || len(found) != 1 || found[0].Name != "tf-2.12-cuda11.8" {
		t.Fatalf("search = %+v, %v", found, err)
	}
	all, _ := svc.Catalog(ctx, store.ImageFilter{})
	if all[0].Name != "jax-0.4-cuda12.8" {
		t.Errorf("certified images must come first: %s", all[0].Name)
	}
	for _, n := range []struct{ name, driver string }{{"old-driver", "520.61.05"}, {"new-driver", "570.86.10"}} {
		if err := st.CreateNode(ctx, &models.Node{Name: n.name, State: models.NodeReady, DriverVersion: n.driver}, nil); err != nil {
			t.Fatal(err)
		}
	}
	m, err := svc.CompatibilityMatrix(ctx, store.ImageFilter{})
	if err != nil || len(m.Nodes) != 2 || len(m.Rows) != 3 {
		t.Fatalf("matrix = %+v, %v", m, err)
	}
	want := map[string][2]string{ // image -> (new-driver, old-driver)
		"jax-0.4-cuda12.8":     {images.CompatFull, images.CompatNone},
		"pytorch-2.5-cuda12.4": {images.CompatFull, images.CompatNone},
		"tf-2.12-cuda11.8":     {images.CompatFull, images.CompatFull},
	}
	for _, row := range m.Rows {
		w := want[row.Image.Name]
		if row.Cells[0].Level != w[0] || row.Cells[1].Level != w[1] {
			t.Errorf("%s on %s/%s = %s/%s, want %s/%s", row.Image.Name, m.Nodes[0].Name, m.Nodes[1].Name, row.Cells[0].Level, row.Cells[1].Level, w[0], w[1])
		}
	}
}

// The built-in plain-command entry names no CUDA version: it runs on every node whose
// runtime runs plain commands (process, Slurm), whatever its driver, and on no docker or
// podman node, which start container images only.
func TestMatrixOfThePlainCommandEntry(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	svc := images.New(st, audit.New(st, time.Now))
	ctx := context.Background()
	if err := st.CreateImage(ctx, &models.Image{Name: "plain-command", Status: models.ImageCertified, Builtin: true, Framework: "other"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"process": images.CompatFull, "no-driver": images.CompatFull, "slurm": images.CompatFull, "docker": images.CompatNone, "podman": images.CompatNone}
	for name := range want {
		n := &models.Node{Name: name, State: models.NodeReady, Runtime: name, DriverVersion: "570.86.10"}
		if name == "no-driver" {
			n.Runtime, n.DriverVersion = "process", ""
		}
		if err := st.CreateNode(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	m, err := svc.CompatibilityMatrix(ctx, store.ImageFilter{})
	if err != nil || len(m.Rows) != 1 || len(m.Nodes) != len(want) {
		t.Fatalf("matrix = %+v, %v", m, err)
	}
	for i, n := range m.Nodes {
		if got := m.Rows[0].Cells[i]; got.Level != want[n.Name] || got.Reason == "" {
			t.Errorf("plain-command on %s = %+v, want %s with a reason", n.Name, got, want[n.Name])
		}
	}
}

// A container image runs only where the scheduler places it: not on a process node, nor
// on a Slurm node whose pool names no container plugin, whatever their drivers; on
// docker, podman and a pyxis Slurm pool's nodes its CUDA version decides.
func TestMatrixOfAContainerImageFollowsTheRuntime(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		svc := images.New(st, audit.New(st, time.Now))
		ctx := context.Background()
		if _, err := svc.Add(ctx, pytorch()); err != nil {
			t.Fatal(err)
		}
		pool := func(name, container string) *int64 {
			cfg := `{"partition":"gpu","log_dir":"/shared/logs","checkpoint_dir":"/shared/ckpt","container":"` + container + `"}`
			p := &models.NodePool{Name: name, Provider: "slurm", ProviderConfig: cfg}
			if err := st.CreateNodePool(ctx, p); err != nil {
				t.Fatal(err)
			}
			return &p.ID
		}
		plain, pyxis := pool("slurm-plain", ""), pool("slurm-pyxis", "pyxis")
		want := map[string]string{"process": images.CompatNone, "slurm-plain": images.CompatNone, "slurm-pyxis": images.CompatFull, "docker": images.CompatFull, "podman": images.CompatFull}
		for name := range want {
			n := &models.Node{Name: name, State: models.NodeReady, Runtime: name, DriverVersion: "570.86.10"}
			switch name {
			case "slurm-plain":
				n.Runtime, n.PoolID = models.RuntimeSlurm, plain
			case "slurm-pyxis":
				n.Runtime, n.PoolID = models.RuntimeSlurm, pyxis
			}
			if err := st.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
		}
		m, err := svc.CompatibilityMatrix(ctx, store.ImageFilter{})
		if err != nil || len(m.Rows) != 1 || len(m.Nodes) != len(want) {
			t.Fatalf("matrix = %+v, %v", m, err)
		}
		for i, n := range m.Nodes {
			got := m.Rows[0].Cells[i]
			if got.Level != want[n.Name] {
				t.Errorf("%s on %s = %+v, want %s", m.Rows[0].Image.Name, n.Name, got, want[n.Name])
			}
			if got.Level == images.CompatNone && !strings.Contains(got.Reason, "plain commands only") {
				t.Errorf("%s on %s: reason %q does not say the node runs plain commands only", m.Rows[0].Image.Name, n.Name, got.Reason)
			}
		}
	})
}
