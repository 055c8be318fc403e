package models

import "time"

// Resources that rates and ledger entries are kept for.
const (
	ResourceGPU     = "gpu"
	ResourceCPU     = "cpu"
	ResourceRAM     = "ram"
	ResourceScratch = "scratch"
	ResourceStorage = "storage"
	ResourceEgress  = "egress"
	ResourceLicense = "license"
)

// CostRate is the price of one unit of a resource from a date on; later rates never rewrite the past.
type CostRate struct {
	ID            int64
	Resource      string
	GPUModel      string
	PoolID        *int64
	CapacityType  string
	ImageID       *int64 // licences attach to images
	Unit          string // gpu-hour, core-hour, gib-hour, gib-month, gib
	RateMicros    int64
	EffectiveFrom time.Time
	CreatedAt     time.Time
}

// LedgerEntry is an append-only charge; entries without a job are unallocated capacity.
type LedgerEntry struct {
	ID            int64
	JobID         *int64
	Attempt       int
	AllocationID  *int64
	UserID        *int64
	ProjectID     *int64
	TeamID        *int64
	PoolID        *int64
	NodeID        *int64
	ImageID       *int64
	GPUModel      string
	Resource      string
	QuantityMilli int64 // milli-units of the rate's unit
	RateMicros    int64
	AmountMicros  int64
	PeriodStart   time.Time
	PeriodEnd     time.Time
	CreatedAt     time.Time
}

// Budget caps a team's or project's monthly spend.
type Budget struct {
	ID           int64
	TeamID       *int64
	ProjectID    *int64
	AmountMicros int64
	Thresholds   string // JSON array of percentages, e.g. [50,80,100]
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// AlertRule watches a metric over a window and notifies and acts.
type AlertRule struct {
	ID        int64
	Name      string
	Metric    string
	Scope     string // team | project | job
	Threshold float64
	WindowSec int64
	Action    string // notify | hold | stop | lower-priority | release
	DryRun    bool
	Enabled   bool
	Channels  string // JSON array of channel ids
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Alert is one firing of a rule with its evidence.
type Alert struct {
	ID            int64
	RuleID        int64
	Scope         string
	ScopeID       int64
	State         string // firing | acknowledged | silenced | resolved
	Fingerprint   string // the same alert is not sent twice
	Evidence      string // JSON
	ActionTaken   string
	FiredAt       time.Time
	AckedByID     *int64
	AckedAt       *time.Time
	SilencedUntil *time.Time
	ResolvedAt    *time.Time
}

// Delivery states of an alert notification or an e-mail.
const (
	DeliveryPending = "pending"
	DeliverySent    = "sent"
	DeliveryFailed  = "failed"
	// DeliveryWithdrawn: an e-mail not sent, as its recipient turned its topic off after
	// it was queued.
	DeliveryWithdrawn = "withdrawn"
)

// Delivery is the retry state of something sent with back-off: an alert's
// notification or a queued e-mail.
type Delivery struct {
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	SentAt        *time.Time
}

// OutboxMail is an e-mail to a person, queued with the change that calls for it and sent
// with back-off like an AlertDelivery; its state is one of the Delivery states.
type OutboxMail struct {
	ID        int64
	ToAddress string
	Subject   string
	Body      string
	Link      string // the portal path it is about, e.g. /feedback/12
	OptOut    string // the portal path where its kind of e-mail is turned off; "" for none
	// Topic and UserID: an e-mail of a topic (MailTopicFeedback) to that person, who may
	// turn the topic off between queueing and sending; "" and nil for none.
	Topic  string
	UserID *int64
	Delivery
	CreatedAt time.Time
}

// TableName keeps the name of the migration.
func (OutboxMail) TableName() string { return "mail_outbox" }

// MailTopicFeedback is the topic of the e-mails to the author of a feedback item about
// its answer, its status and replies.
const MailTopicFeedback = "feedback"

// MailOptOut is a topic of e-mails a person turned off.
type MailOptOut struct {
	UserID    int64
	Topic     string
	CreatedAt time.Time
}

// AlertDelivery is one alert's notification through one channel, retried with back-off.
type AlertDelivery struct {
	ID        int64
	AlertID   int64
	ChannelID int64
	Delivery
	CreatedAt time.Time
}

// NotificationChannel is where alerts go: a webhook or an e-mail address.
type NotificationChannel struct {
	ID        int64
	Name      string
	Kind      string // webhook | email
	Target    string `json:"-"` // URL or address; webhook URLs may hold secrets
	Enabled   bool
	CreatedAt time.Time
}

// LedgerDay is the ledger summed per UTC day and key, for roll-ups; absent owners are 0.
type LedgerDay struct {
	ID            int64
	Day           time.Time
	JobID         int64
	UserID        int64
	ProjectID     int64
	TeamID        int64
	PoolID        int64
	ImageID       int64
	GPUModel      string
	Resource      string
	QuantityMilli int64
	AmountMicros  int64
}

// TableName is the migration's name for the daily ledger.
func (LedgerDay) TableName() string { return "ledger_daily" }
