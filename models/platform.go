package models

import "time"

// Actor types of audit events.
const (
	ActorUser   = "user"
	ActorToken  = "token"
	ActorNode   = "node"
	ActorSystem = "system"
	// ActorJob is a running job speaking with its job token.
	ActorJob = "job"
)

// AuditEvent is one entry of the append-only, hash-chained audit log.
type AuditEvent struct {
	ID         int64
	At         time.Time
	Actor      string
	ActorType  string
	Action     string
	ObjectType string
	ObjectID   string
	ProjectID  *int64
	Detail     string // JSON of what changed
	SourceIP   string
	RequestID  string
	PrevHash   string
	Hash       string
}

// Feedback statuses.
const (
	FeedbackNew        = "new"
	FeedbackPlanned    = "planned"
	FeedbackInProgress = "in-progress"
	FeedbackDone       = "done"
	FeedbackDeclined   = "declined"
)

// FeedbackItem is an idea, bug or question a user filed.
type FeedbackItem struct {
	ID           int64
	UserID       int64
	Category     string
	Title        string
	Body         string
	Page         string
	JobID        *int64
	Status       string
	Answer       string
	AnsweredByID *int64
	AnsweredAt   *time.Time
	VoteCount    int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// FeedbackVote is one user's vote on an item.
type FeedbackVote struct {
	ID        int64
	ItemID    int64
	UserID    int64
	CreatedAt time.Time
}

// FeedbackComment is a reply on an item.
type FeedbackComment struct {
	ID        int64
	ItemID    int64
	UserID    int64
	Body      string
	CreatedAt time.Time
}

// Notification is an in-portal message to one user.
type Notification struct {
	ID        int64
	UserID    int64
	Kind      string
	Title     string
	Body      string
	Link      string
	ReadAt    *time.Time
	CreatedAt time.Time
}

// Telemetry resolutions: raw samples, then 1-minute and 1-hour roll-ups.
const (
	ResolutionRaw    = "raw"
	ResolutionMinute = "1m"
	ResolutionHour   = "1h"
)

// Bits of TelemetrySample.Reported. A GPU in MIG mode reports no utilisation, a board
// without ECC no ECC counts, a PCIe board no NVLink throughput.
const (
	ReportedUtil = 1 << iota
	ReportedMemory
	ReportedTemperature
	ReportedPower
	ReportedSMClock
	ReportedNVLink
	ReportedPCIe
	ReportedECC
)

// TelemetrySample is one GPU's measurements at a time (or a roll-up window starting then).
type TelemetrySample struct {
	ID         int64
	NodeID     int64
	DeviceUUID string
	JobID      *int64
	At         time.Time
	Resolution string
	UtilPct    float64
	UtilMinPct float64
	UtilMaxPct float64
	MemUsedMiB int64 `gorm:"column:mem_used_mib"`
	MemMaxMiB  int64 `gorm:"column:mem_max_mib"`
	TempC      float64
	PowerW     float64
	SMClockMHz int64   `gorm:"column:sm_clock_mhz"`
	NVLinkMBps float64 `gorm:"column:nvlink_mbps"`
	PCIeMBps   float64 `gorm:"column:pcie_mbps"`
	ECCErrors  int64
	XIDCount   int64 `gorm:"column:xid_count"`
	// Samples is how many raw readings the row stands for (1 for a raw row).
	Samples int
	// Reported is a bitmask of the gauges the device reported (Reported* bits): a
	// gauge absent from it was not measured and is not 0.
	Reported      int
	MemMinMiB     int64 `gorm:"column:mem_min_mib"`
	TempMinC      float64
	TempMaxC      float64
	PowerMinW     float64
	PowerMaxW     float64
	SMClockMinMHz int64   `gorm:"column:sm_clock_min_mhz"`
	SMClockMaxMHz int64   `gorm:"column:sm_clock_max_mhz"`
	NVLinkMaxMBps float64 `gorm:"column:nvlink_max_mbps"`
	PCIeMaxMBps   float64 `gorm:"column:pcie_max_mbps"`
	// LastXID is the code of the newest XID error in the window, 0 for none.
	LastXID int `gorm:"column:last_xid"`
}

// CasbinRule is a Casbin policy line: its ptype and up to six values, empty where unused
// (the table layout of casbin/gorm-adapter).
type CasbinRule struct {
	ID    int64
	Ptype string
	V0    string
	V1    string
	V2    string
	V3    string
	V4    string
	V5    string
}

// TableName is the policy table.
func (CasbinRule) TableName() string { return "casbin_rule" }
