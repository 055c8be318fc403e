package exporter

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// gpuLabels are dcgm-exporter's labels (gpu index, UUID, device node, model, host,
// and the MIG profile, empty on a whole GPU), then Gantry's: the job (its id, since
// names repeat), its name, project and team, empty when no single job holds the GPU.
var gpuLabels = []string{"gpu", "UUID", "device", "modelName", "Hostname", "GPU_I_PROFILE", "job", "job_name", "project", "team"}

// dcgmGauge is one DCGM field exported per GPU: its bit in the reported mask (0: always
// there) and how to read it from a reading.
type dcgmGauge struct {
	desc  *prometheus.Desc
	bit   int
	value func(r *store.GPUReading, xid int) (float64, bool)
}

func newDCGMGauges() []dcgmGauge {
	g := func(name, help string, bit int, value func(r *store.GPUReading, xid int) (float64, bool)) dcgmGauge {
		return dcgmGauge{desc: prometheus.NewDesc(name, help, gpuLabels, nil), bit: bit, value: value}
	}
	always := func(f func(r *store.GPUReading) float64) func(*store.GPUReading, int) (float64, bool) {
		return func(r *store.GPUReading, _ int) (float64, bool) { return f(r), true }
	}
	return []dcgmGauge{
		g("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", models.ReportedUtil,
			always(func(r *store.GPUReading) float64 { return r.UtilPct })),
		g("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", models.ReportedMemory,
			always(func(r *store.GPUReading) float64 { return float64(r.MemUsedMiB) })),
		g("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", models.ReportedMemory,
			func(r *store.GPUReading, _ int) (float64, bool) {
				return float64(r.MemoryMiB - r.MemUsedMiB), r.MemoryMiB > 0
			}),
		g("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", models.ReportedTemperature,
			always(func(r *store.GPUReading) float64 { return r.TempC })),
		g("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", models.ReportedPower,
			always(func(r *store.GPUReading) float64 { return r.PowerW })),
		g("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", models.ReportedSMClock,
			always(func(r *store.GPUReading) float64 { return float64(r.SMClockMHz) })),
		g("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink throughput over all links, transmit plus receive (in MB/s).", models.ReportedNVLink,
			always(func(r *store.GPUReading) float64 { return r.NVLinkMBps })),
		g("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Uncorrectable (double-bit) ECC errors since the driver loaded.", models.ReportedECC,
			always(func(r *store.GPUReading) float64 { return float64(r.ECCErrors) })),
		g("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered (0: none in the XID window).", 0,
			func(r *store.GPUReading, xid int) (float64, bool) { return float64(xid), r.MIGProfile == "" }),
	}
}

// gpuCollector exports the newest sample of every GPU and MIG instance.
type gpuCollector struct {
	store  *store.Store
	now    func() time.Time
	cfg    Config
	gauges []dcgmGauge
}

func newGPUCollector(st *store.Store, now func() time.Time, cfg Config) *gpuCollector {
	return &gpuCollector{store: st, now: now, cfg: cfg, gauges: newDCGMGauges()}
}

func (c *gpuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		ch <- g.desc
	}
}

func (c *gpuCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ScrapeTimeout)
	defer cancel()
	now := c.now().UTC()
	readings, err := c.store.LatestGPUReadings(ctx, now.Add(-c.cfg.Staleness))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.gauges[0].desc, fmt.Errorf("read GPU telemetry: %w", err))
		return
	}
	xids, err := c.store.LatestXIDs(ctx, now.Add(-c.cfg.XIDWindow))
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.gauges[len(c.gauges)-1].desc, fmt.Errorf("read GPU XIDs: %w", err))
		return
	}
	for i := range readings {
		r := &readings[i]
		labels := readingLabels(r)
		for _, g := range c.gauges {
			if g.bit != 0 && r.Reported&g.bit == 0 {
				continue
			}
			if v, ok := g.value(r, xids[r.DeviceUUID]); ok {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, labels...)
			}
		}
	}
}

// readingLabels are the label values of gpuLabels for one reading. A MIG instance
// carries its GPU's index and its own UUID (what CUDA_VISIBLE_DEVICES names), so two
// instances of one profile on one GPU stay two series.
func readingLabels(r *store.GPUReading) []string {
	gpu, device := "", ""
	if r.DeviceIndex >= 0 {
		gpu, device = strconv.Itoa(r.DeviceIndex), "nvidia"+strconv.Itoa(r.DeviceIndex)
	}
	job := ""
	if r.JobID != nil {
		job = strconv.FormatInt(*r.JobID, 10)
	}
	return []string{gpu, r.DeviceUUID, device, r.Model, r.NodeName, r.MIGProfile, job, r.JobName, r.ProjectName, r.TeamName}
}
