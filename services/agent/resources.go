package agent

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// measureResources fills the resources cfg leaves at zero from the machine: CPUs,
// memory (/proc/meminfo), and the free space of the data dir's file system.
func measureResources(cfg *Config) error {
	if cfg.CPUMilli < 0 || cfg.MemoryMiB < 0 || cfg.ScratchMiB < 0 {
		return fmt.Errorf("node resources cannot be negative")
	}
	if cfg.CPUMilli == 0 {
		cfg.CPUMilli = int64(runtime.NumCPU()) * 1000
	}
	if cfg.MemoryMiB == 0 {
		mem, err := memTotalMiB()
		if err != nil {
			return fmt.Errorf("measure memory (give --memory-mib): %w", err)
		}
		cfg.MemoryMiB = mem
	}
	if cfg.ScratchMiB == 0 {
		if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(cfg.DataDir, &st); err != nil {
			return fmt.Errorf("measure scratch space of %s (give --scratch-mib): %w", cfg.DataDir, err)
		}
		cfg.ScratchMiB = int64(st.Bavail) * st.Bsize >> 20
	}
	return nil
}

func memTotalMiB() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kib >> 10, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}
