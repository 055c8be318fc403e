package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// maxSimGPUs bounds a simulated node; the largest real nodes hold 16 GPUs.
const maxSimGPUs = 16

// migSlices is how many compute slices a MIG-capable GPU has.
const migSlices = 7

// specPart is one comma-separated part of a simulated-GPU spec.
type specPart struct {
	model model
	count int
	mig   []migProfile // MIG instances of each GPU; nil when MIG is off
}

// parseSpec reads a spec such as "2xA100-80GB,4xL4-24GB" or
// "1xA100-40GB:mig=3g.20gb+3g.20gb". A part without a count means one GPU.
func parseSpec(spec string) ([]specPart, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("%w: spec is empty; want parts such as \"2xA100-80GB,4xL4-24GB\"", ErrInvalidSpec)
	}
	var parts []specPart
	total := 0
	for i, raw := range strings.Split(spec, ",") {
		p, err := parseSpecPart(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: part %d %q: %s", ErrInvalidSpec, i+1, strings.TrimSpace(raw), err)
		}
		parts = append(parts, p)
		total += p.count
	}
	if total > maxSimGPUs {
		return nil, fmt.Errorf("%w: %d GPUs in all; a node has at most %d", ErrInvalidSpec, total, maxSimGPUs)
	}
	return parts, nil
}

// parseSpecPart reads "[COUNTx]MODEL[:mig=PROFILE+PROFILE…]". Its errors are
// bare reasons; parseSpec adds which part they are about.
func parseSpecPart(raw string) (specPart, error) {
	if raw == "" {
		return specPart{}, fmt.Errorf("empty part; want COUNTxMODEL such as 2xA100-80GB")
	}
	body, option, hasOption := strings.Cut(raw, ":")
	p := specPart{count: 1}
	name := strings.TrimSpace(body)
	if i := strings.IndexAny(name, "xX"); i >= 0 {
		countText, rest := name[:i], name[i+1:]
		n, err := strconv.Atoi(strings.TrimSpace(countText))
		if err != nil || n < 1 || n > maxSimGPUs {
			return specPart{}, fmt.Errorf("count %q must be a whole number from 1 to %d", countText, maxSimGPUs)
		}
		p.count, name = n, strings.TrimSpace(rest)
	}
	m, ok := modelByKey(name)
	if !ok {
		return specPart{}, fmt.Errorf("unknown model %q; known models: %s", name, strings.Join(KnownModels(), ", "))
	}
	p.model = m
	if hasOption {
		mig, err := parseMIGOption(m, strings.TrimSpace(option))
		if err != nil {
			return specPart{}, err
		}
		p.mig = mig
	}
	return p, nil
}

// parseMIGOption reads "mig=3g.20gb+3g.20gb" for model m. It checks the sum of
// compute slices and of memory; NVIDIA's finer placement rules are not modelled.
func parseMIGOption(m model, option string) ([]migProfile, error) {
	list, found := strings.CutPrefix(option, "mig=")
	if !found {
		return nil, fmt.Errorf("unknown option %q; the only option is mig=PROFILE+PROFILE, e.g. mig=3g.20gb+3g.20gb", option)
	}
	if m.mig == nil {
		return nil, fmt.Errorf("model %s has no MIG; MIG models: %s", m.key, strings.Join(migModels(), ", "))
	}
	var profiles []migProfile
	slices, memory := 0, int64(0)
	for _, name := range strings.Split(list, "+") {
		prof, ok := migProfileByName(m, strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("unknown MIG profile %q for %s; profiles: %s", name, m.key, strings.Join(migProfileNames(m), ", "))
		}
		profiles = append(profiles, prof)
		slices += prof.slices
		memory += prof.memoryMiB
	}
	if slices > migSlices {
		return nil, fmt.Errorf("MIG profiles use %d compute slices; %s has %d", slices, m.key, migSlices)
	}
	if memory > m.memoryMiB {
		return nil, fmt.Errorf("MIG profiles use %d MiB; %s has %d MiB", memory, m.key, m.memoryMiB)
	}
	return profiles, nil
}

func migProfileByName(m model, name string) (migProfile, bool) {
	for _, p := range m.mig {
		if strings.EqualFold(p.name, name) {
			return p, true
		}
	}
	return migProfile{}, false
}

func migProfileNames(m model) []string {
	names := make([]string, len(m.mig))
	for i, p := range m.mig {
		names[i] = p.name
	}
	return names
}

func migModels() []string {
	var keys []string
	for _, m := range models {
		if m.mig != nil {
			keys = append(keys, m.key)
		}
	}
	return keys
}
