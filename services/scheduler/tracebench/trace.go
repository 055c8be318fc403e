package tracebench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// TraceNode is one row of an openb node list.
type TraceNode struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	Model     string
}

// TracePod is one row of an openb pod list, normalised as PROTOCOL.md §1 says:
// Milli is the per-GPU share (1..1000) of a GPU pod and 0 for a CPU-only pod.
type TracePod struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	Num       int
	Milli     int
	Spec      []string
	// QoS is the pod's class (LS, BE, Burstable, Guaranteed), when the list has it.
	QoS string
	// Created and Deleted are the pod's creation and deletion times in seconds from
	// the trace's start, when the list has them (0 otherwise).
	Created, Deleted int64
}

// GPUDemand is the pod's GPU demand in milli-GPU (num × milli).
func (p TracePod) GPUDemand() int64 { return int64(p.Num) * int64(p.Milli) }

// Sharing reports whether the pod shares one GPU with others.
func (p TracePod) Sharing() bool { return p.Num == 1 && p.Milli < 1000 }

// LineError locates a malformed value in a trace file.
type LineError struct {
	File   string
	Line   int
	Column string
	Msg    string
}

func (e *LineError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: column %s: %s", e.File, e.Line, e.Column, e.Msg)
}

// maxGPUsPerNode bounds the GPU count a node row may declare.
const maxGPUsPerNode = 64

// ReadNodesFile reads an openb node list CSV.
func ReadNodesFile(path string) ([]TraceNode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	defer f.Close()
	return ReadNodes(path, f)
}

// ReadPodsFile reads an openb pod list CSV.
func ReadPodsFile(path string) ([]TracePod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read pods: %w", err)
	}
	defer f.Close()
	return ReadPods(path, f)
}

// ReadNodes parses an openb node list (sn,cpu_milli,memory_mib,gpu,model); name labels errors.
func ReadNodes(name string, r io.Reader) ([]TraceNode, error) {
	t, err := newTable(name, r, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"})
	if err != nil {
		return nil, err
	}
	var nodes []TraceNode
	seen := map[string]int{}
	for t.next() {
		n := TraceNode{
			Name:      t.str("sn"),
			CPUMilli:  t.int64("cpu_milli", 0, 1<<40),
			MemoryMiB: t.int64("memory_mib", 0, 1<<40),
			GPUs:      int(t.int64("gpu", 0, maxGPUsPerNode)),
			Model:     t.str("model"),
		}
		if t.err != nil {
			return nil, t.err
		}
		if n.Name == "" {
			return nil, t.fail("sn", "node name is empty")
		}
		if prev, dup := seen[n.Name]; dup {
			return nil, t.fail("sn", fmt.Sprintf("node %q already defined on line %d", n.Name, prev))
		}
		seen[n.Name] = t.line
		if n.GPUs > 0 && n.Model == "" {
			return nil, t.fail("model", fmt.Sprintf("node %q has %d GPUs but no model", n.Name, n.GPUs))
		}
		nodes = append(nodes, n)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", name)
	}
	return nodes, nil
}

// ReadPods parses an openb pod list; gpu_spec and the columns after it are optional.
func ReadPods(name string, r io.Reader) ([]TracePod, error) {
	t, err := newTable(name, r, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
	if err != nil {
		return nil, err
	}
	var pods []TracePod
	for t.next() {
		p := TracePod{
			Name:      t.str("name"),
			CPUMilli:  t.int64("cpu_milli", 0, 1<<40),
			MemoryMiB: t.int64("memory_mib", 0, 1<<40),
			Num:       int(t.int64("num_gpu", 0, maxGPUsPerNode)),
		}
		milli := t.int64("gpu_milli", -1<<40, 1<<40)
		if t.err != nil {
			return nil, t.err
		}
		if p.Name == "" {
			return nil, t.fail("name", "pod name is empty")
		}
		p.Milli = clipMilli(p.Num, milli)
		if p.Num > 0 && p.Milli == 0 {
			return nil, t.fail("gpu_milli", fmt.Sprintf("pod %q asks for %d GPUs with gpu_milli %d; allowed: 1..1000", p.Name, p.Num, milli))
		}
		if spec := t.str("gpu_spec"); spec != "" && spec != "nan" {
			p.Spec = strings.Split(spec, "|")
		}
		p.QoS = t.str("qos")
		if _, ok := t.cols["creation_time"]; ok {
			if _, ok := t.cols["deletion_time"]; !ok {
				return nil, &LineError{File: name, Line: 1, Msg: "header has creation_time but no deletion_time"}
			}
			p.Created = t.int64("creation_time", 0, 1<<40)
			p.Deleted = t.int64("deletion_time", 0, 1<<40)
			if t.err != nil {
				return nil, t.err
			}
			if p.Deleted < p.Created {
				return nil, t.fail("deletion_time", fmt.Sprintf("pod %q is deleted at %d, before its creation at %d", p.Name, p.Deleted, p.Created))
			}
		}
		pods = append(pods, p)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: no pods", name)
	}
	return pods, nil
}

// clipMilli applies the converter's rule: (0,1000] kept, above 1000 becomes 1000, else 0.
func clipMilli(num int, milli int64) int {
	switch {
	case num == 0 || milli <= 0:
		return 0
	case milli > 1000:
		return 1000
	default:
		return int(milli)
	}
}

// table reads a CSV by header name and remembers the first error with its line.
type table struct {
	name string
	r    *csv.Reader
	cols map[string]int
	row  []string
	line int
	err  error
}

func newTable(name string, r io.Reader, required []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &LineError{File: name, Line: 1, Msg: "empty file, want a header line"}
	}
	if err != nil {
		return nil, csvLineError(name, err)
	}
	t := &table{name: name, r: cr, cols: map[string]int{}}
	for i, h := range header {
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, &LineError{File: name, Line: 1, Msg: fmt.Sprintf("header lacks column(s) %s; want %s", strings.Join(missing, ", "), strings.Join(required, ","))}
	}
	return t, nil
}

func (t *table) next() bool {
	if t.err != nil {
		return false
	}
	row, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false
	}
	if err != nil {
		t.err = csvLineError(t.name, err)
		return false
	}
	t.row = row
	t.line, _ = t.r.FieldPos(0)
	return true
}

func (t *table) str(col string) string {
	i, ok := t.cols[col]
	if !ok || i >= len(t.row) {
		return ""
	}
	return strings.TrimSpace(t.row[i])
}

func (t *table) int64(col string, lo, hi int64) int64 {
	if t.err != nil {
		return 0
	}
	i := t.cols[col]
	if i >= len(t.row) {
		t.err = t.fail(col, fmt.Sprintf("missing value (row has %d fields)", len(t.row)))
		return 0
	}
	s := strings.TrimSpace(t.row[i])
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Some exports write integral floats ("4.0"); accept those, nothing else.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != float64(int64(f)) {
			t.err = t.fail(col, fmt.Sprintf("%q is not an integer", s))
			return 0
		}
		v = int64(f)
	}
	if v < lo || v > hi {
		t.err = t.fail(col, fmt.Sprintf("%d is out of range; allowed: %d..%d", v, lo, hi))
		return 0
	}
	return v
}

func (t *table) fail(col, msg string) error {
	return &LineError{File: t.name, Line: t.line, Column: col, Msg: msg}
}

func csvLineError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{File: name, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", name, err)
}
