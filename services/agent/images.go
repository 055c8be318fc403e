package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// maxUsedImages bounds how many images of past jobs a node keeps reporting.
const maxUsedImages = 256

// imageResend is how often the images are reported even when unchanged: the server
// follows only catalog images, and one added to the catalog later is then known.
const imageResend = 5 * time.Minute

// imageKeeper pulls the images the server wants on a container node before a job
// needs them (the catalog's pre-pull marks, in each heartbeat's answer), and knows
// which of those and of its jobs' images the node holds, for the heartbeat to
// report. A nil keeper (the process runtime) does nothing.
type imageKeeper struct {
	cli     *containerCLI
	timeout time.Duration
	log     *slog.Logger
	kick    chan struct{}

	mu     sync.Mutex
	wanted []string             // to pre-pull, as the server last said
	used   []string             // of the node's jobs, oldest first
	failed map[string]time.Time // pre-pulls that failed, when
	held   []string             // of wanted and used, those the runtime holds; sorted
	looked bool                 // held has been read once
	sent   []string             // what the server took last
	sentAt time.Time
}

func newImageKeeper(cli *containerCLI, timeout time.Duration, log *slog.Logger) *imageKeeper {
	return &imageKeeper{cli: cli, timeout: timeout, log: log, kick: make(chan struct{}, 1), failed: map[string]time.Time{}}
}

// want sets the images to pre-pull; a change is looked after at once.
func (k *imageKeeper) want(refs []string) {
	if k == nil {
		return
	}
	refs = slices.Compact(slices.Sorted(slices.Values(refs)))
	k.mu.Lock()
	changed := !slices.Equal(refs, k.wanted)
	k.wanted = refs
	k.mu.Unlock()
	if changed {
		k.soon()
	}
}

// usedImage records the image of a job the node starts, so that it is reported
// once its shim pulled it.
func (k *imageKeeper) usedImage(ref string) {
	if k == nil || ref == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.used = slices.DeleteFunc(k.used, func(r string) bool { return r == ref })
	k.used = append(k.used, ref)
	if len(k.used) > maxUsedImages {
		k.used = k.used[len(k.used)-maxUsedImages:]
	}
}

// soon looks after the images at once: the wanted ones changed, or a job's container
// runs, so its image is on the node.
func (k *imageKeeper) soon() {
	if k == nil {
		return
	}
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// report is what the next heartbeat says of the images: nil when the server has it.
func (k *imageKeeper) report() *agentapi.ImageReport {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.looked || !k.sentAt.IsZero() && slices.Equal(k.held, k.sent) && time.Since(k.sentAt) < imageResend {
		return nil
	}
	return &agentapi.ImageReport{Pulled: slices.Clone(k.held)}
}

// reported records that the server took r.
func (k *imageKeeper) reported(r *agentapi.ImageReport) {
	if k == nil || r == nil {
		return
	}
	k.mu.Lock()
	k.sent, k.sentAt = r.Pulled, time.Now()
	k.mu.Unlock()
}

// run looks after the images every `every`, and at once when the wanted ones change.
func (k *imageKeeper) run(ctx context.Context, every time.Duration) {
	for {
		k.look(ctx)
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		case <-time.After(every):
		}
	}
}

// look pulls the wanted images the runtime lacks, one at a time (a pull that failed
// is tried again after ten minutes), and reads which images the node holds.
func (k *imageKeeper) look(ctx context.Context) {
	k.mu.Lock()
	wanted := slices.Clone(k.wanted)
	refs := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(k.wanted), k.used...))))
	k.mu.Unlock()
	held := []string{}
	for _, ref := range refs {
		if ctx.Err() != nil {
			return
		}
		ictx, cancel := context.WithTimeout(ctx, cliTimeout)
		has, err := k.cli.hasImage(ictx, ref)
		cancel()
		if err != nil {
			k.log.Warn("cannot tell whether the node holds an image", "image", ref, "err", err)
			return // the runtime is in trouble: keep what was reported
		}
		if !has && slices.Contains(wanted, ref) && k.retryDue(ref) {
			began := time.Now()
			if err := k.cli.pull(ctx, ref, k.timeout); err != nil {
				if ctx.Err() != nil {
					return
				}
				k.log.Warn("cannot pre-pull an image; trying again in ten minutes", "image", ref, "err", err)
				k.mu.Lock()
				k.failed[ref] = time.Now()
				k.mu.Unlock()
			} else {
				k.log.Info("pre-pulled an image", "image", ref, "took", time.Since(began).Round(time.Millisecond))
				has = true
			}
		}
		if has {
			held = append(held, ref)
		}
	}
	k.mu.Lock()
	k.held, k.looked = held, true
	k.mu.Unlock()
}

func (k *imageKeeper) retryDue(ref string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.failed[ref]
	if ok && time.Since(at) < 10*time.Minute {
		return false
	}
	delete(k.failed, ref)
	return true
}
