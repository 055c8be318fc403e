package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agent/containertest"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// Real `gantry agent --runtime docker|podman` processes run jobs in containers of a
// local image: output and exit codes reach the server, an image that cannot be
// pulled fails its job with the reason, a killed agent's successor re-attaches to
// the running container, and the node reports the catalog's pre-pull image it holds.
func TestE2EContainerRuntimes(t *testing.T) {
	for _, rt := range containertest.Runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			_, image := containertest.Runtime(t, rt)
			// The restarted agent asks its runtime for its version before it heartbeats
			// again, which under load took podman over e2eTimings' 4 s: the node must not
			// be judged lost meanwhile.
			c := newCluster(t, func(c *cluster) { c.nodeTimeout = 30 * time.Second })
			t.Cleanup(func() { removeContainers(t, c, rt) })
			pre := &models.Image{Name: "busybox", Reference: image, Status: models.ImageCertified, PrePull: true}
			missing := &models.Image{Name: "nothing", Reference: "registry.invalid/gantry/nothing:1", Status: models.ImageCertified}
			for _, img := range []*models.Image{pre, missing} {
				if err := c.st.CreateImage(c.ctx, img); err != nil {
					t.Fatal(err)
				}
			}
			node := "box-" + rt
			c.startAgent(node, "1xL4-24GB", "--runtime", rt, "--container-network", "none")
			boxed := func(s *jobs.Spec) { s.Image, s.Resources.GPUs = pre.Name, 0 }

			ok := c.submit("hello", `echo "hello from $GANTRY_JOB_ID in $(pwd)"; echo warn >&2`, boxed)
			failing := c.submit("fails", `exit 3`, boxed)
			unpullable := c.submit("unpullable", `true`, boxed, func(s *jobs.Spec) { s.Image = missing.Name })

			c.waitState(ok.ID, models.JobSucceeded)
			if got := c.output(ok.ID, 1, "stdout"); got != "hello from "+itoa(ok.ID)+" in /gantry/work\n" {
				t.Errorf("stdout = %q", got)
			}
			if got := c.output(ok.ID, 1, "stderr"); got != "warn\n" {
				t.Errorf("stderr = %q", got)
			}
			if j := c.waitState(failing.ID, models.JobFailed); j.ExitCode == nil || *j.ExitCode != 3 {
				t.Errorf("failing job = %+v, want exit code 3", j)
			}
			c.waitState(unpullable.ID, models.JobFailed)
			evs, err := c.st.JobEvents(c.ctx, unpullable.ID)
			if err != nil || len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Message, "cannot pull image registry.invalid/gantry/nothing:1") {
				t.Errorf("the unpullable job's last event = %+v, %v; want why", evs, err)
			}

			patient := c.submit("patient", `i=0; while [ $i -lt 30 ]; do echo "tick $i"; i=$((i+1)); sleep 0.05; done; echo finished`, boxed)
			c.waitState(patient.ID, models.JobRunning)
			c.waitFor("some output", func() bool { return strings.Contains(c.output(patient.ID, 1, "stdout"), "tick 1\n") })
			c.agents[node].kill()
			restarted := c.startAgent(node, "1xL4-24GB", "--runtime", rt, "--container-network", "none")
			if done := c.waitState(patient.ID, models.JobSucceeded); done.Attempt != 1 {
				t.Fatalf("the job ran %d attempts, want 1", done.Attempt)
			}
			if got := c.output(patient.ID, 1, "stdout"); got != ticks(30) {
				t.Fatalf("output = %q", got)
			}
			if !strings.Contains(restarted.logText(), "re-attached to an attempt") {
				t.Error("the restarted agent did not say it re-attached")
			}

			n := mustNode(t, c, node)
			c.waitFor("the node to report the pre-pull image it holds", func() bool {
				rows, err := c.st.NodeImages(c.ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					if r.NodeID == n.ID && r.ImageID == pre.ID {
						return true
					}
				}
				return false
			})
		})
	}
}

// A docker and a podman node pull from a real registry (in the test, on loopback):
// the catalog's pre-pull image before any job needs it, and a job's image when its
// job starts; the job runs in it, says in its stderr that its image was pulled, and
// the node reports both images as held.
func TestE2EContainerPullsFromARegistry(t *testing.T) {
	for _, rt := range containertest.Runtimes {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			cli, _ := containertest.Runtime(t, rt)
			reg := containertest.NewRegistry(t)
			warm := &models.Image{Name: "warm", Reference: reg.Push(t, "lab/warm"), Status: models.ImageCertified, PrePull: true}
			train := &models.Image{Name: "train", Reference: reg.Push(t, "lab/train"), Status: models.ImageCertified}
			t.Cleanup(func() { containertest.RemoveImages(t, cli, warm.Reference, train.Reference) })
			c := newCluster(t)
			t.Cleanup(func() { removeContainers(t, c, rt) })
			for _, img := range []*models.Image{warm, train} {
				if err := c.st.CreateImage(c.ctx, img); err != nil {
					t.Fatal(err)
				}
			}
			node := "pull-" + rt
			c.startAgentEnv(node, "1xL4-24GB", reg.Env, "--runtime", rt, "--container-network", "none")
			n := mustNode(t, c, node)
			holds := func(img *models.Image) func() bool {
				return func() bool {
					rows, err := c.st.NodeImages(c.ctx)
					if err != nil {
						t.Fatal(err)
					}
					return slices.ContainsFunc(rows, func(r models.NodeImage) bool { return r.NodeID == n.ID && r.ImageID == img.ID })
				}
			}
			c.waitFor("the node to pre-pull "+warm.Reference, holds(warm))
			if reg.Fetched("lab/warm") == 0 || reg.Fetched("lab/train") != 0 {
				t.Fatalf("the registry served %d manifests of the pre-pull image and %d of the job's before any job, want some and none",
					reg.Fetched("lab/warm"), reg.Fetched("lab/train"))
			}

			j := c.submit("pulled", `head -n 1 /etc/passwd; echo "job $GANTRY_JOB_ID in $(pwd)"`, func(s *jobs.Spec) { s.Image, s.Resources.GPUs = train.Name, 0 })
			c.waitState(j.ID, models.JobSucceeded)
			if got, want := c.output(j.ID, 1, "stdout"), "root:x:0:0:root:/root:/bin/sh\njob "+itoa(j.ID)+" in /gantry/work\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			stderr := c.output(j.ID, 1, "stderr")
			for _, want := range []string{"gantry: pulling image " + train.Reference + "\n", "gantry: pulled image " + train.Reference + " in "} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr = %q, want it to say %q", stderr, want)
				}
			}
			if reg.Fetched("lab/train") == 0 {
				t.Error("the registry served no manifest of the job's image")
			}
			c.waitFor("the node to report the job's image "+train.Reference, holds(train))
		})
	}
}

// removeContainers removes what the cluster's attempts left in the runtime.
func removeContainers(t *testing.T, c *cluster, runtime string) {
	specs, _ := filepath.Glob(filepath.Join(c.dir, "agents", "*", "attempts", "*", "spec.json"))
	var names []string
	for _, p := range specs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var spec struct {
			Container *struct{ Name string }
		}
		if json.Unmarshal(b, &spec) == nil && spec.Container != nil {
			names = append(names, spec.Container.Name)
		}
	}
	cli, _ := containertest.Runtime(t, runtime)
	containertest.Remove(t, cli, names...)
}
