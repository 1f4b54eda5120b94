package jobops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/time/rate"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/tracing"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/workflows"
)

// Outbox is the store of job starts the Dispatcher reads and clears.
type Outbox interface {
	ClaimJobStarts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.JobStart, error)
	GetJobStart(ctx context.Context, jobID string) (*store.JobStart, error)
	DeleteJobStarts(ctx context.Context, jobIDs []string) error
	RetryJobStart(ctx context.Context, jobID string, next time.Time) error
	FailJobStart(ctx context.Context, jobID, code, message string, at time.Time) error
	ReleaseJobStarts(ctx context.Context, jobIDs []string, now time.Time) error
}

// DispatcherConfig is a Dispatcher's dependencies and settings; zero
// values take the defaults.
type DispatcherConfig struct {
	Store    Outbox
	Temporal client.Client
	// EagerStart asks Temporal to hand new workflows straight to this
	// process's worker (only when the worker runs in the same process).
	EagerStart bool
	// Concurrency is how many starts are in flight at once (default 1).
	// It bounds how fast new jobs reach the workers, at most Concurrency
	// over a start's latency per second: few keep an all-in-one process
	// responsive under a burst; against a remote Temporal, where a start
	// is a network round trip, use more.
	Concurrency int
	// AcceptTarget paces starts during a burst of new jobs: while jobs are
	// accepted much faster than they start, starts slow down whenever more
	// than one acceptance in 20 (Offer's took) takes longer than this
	// (pacer.go). Zero never paces: for an API whose starts do not share
	// its CPUs with the workers and the Temporal server.
	AcceptTarget time.Duration
	// SearchAttributes: the namespace has the job workflows' search
	// attributes (workflows.SearchAttributeTypes), so workflows are started
	// with them and keep them up to date.
	SearchAttributes bool
	// Generation is the generation of the job workflow stamped on the
	// jobs started (workflows.StampedGeneration, or --job-generation);
	// 0 stamps none.
	Generation int
	// Lease is how long a start taken by a dispatcher is its own before
	// another may take it (default 30 s).
	Lease time.Duration
	// SweepInterval is how often the outbox is read for starts that are
	// due: handed back, retried, or left by a process that stopped
	// (default 1 s).
	SweepInterval time.Duration
	// MinRetryDelay and MaxRetryDelay bound the exponential backoff after
	// a failed start (defaults 1 s and 1 min).
	MinRetryDelay time.Duration
	MaxRetryDelay time.Duration
	// HandOff leaves new starts to other processes' dispatchers: those of
	// the workers, whose starts are eager (docs/operations.md, Where jobs
	// are started). Lease then records every start due at once, Run calls
	// HandOff after Offers (coalesced) to wake those dispatchers, and its
	// sweep takes only starts left due for HandOffGrace (default 5 s), in
	// case no worker takes them.
	HandOff      func(ctx context.Context) error
	HandOffGrace time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// ErrNotStarted is returned by StartNow for a job it failed so.
var ErrNotStarted = errors.New("the job's workflow cannot be started; the job failed")

// queueSize bounds the starts a dispatcher holds in memory, so that while
// starts take milliseconds the last one is made well within its lease.
// When they take seconds (Temporal is failing) a lease may run out in the
// queue and the sweep take the start again: it is then made twice, which
// is harmless.
const queueSize = 128

// startTimeout bounds one start request.
const startTimeout = 10 * time.Second

// Dispatcher starts job workflows from the outbox. Submit records each
// new job together with its start in the store's outbox (job_starts), in
// one transaction, and offers the start to this process's Dispatcher,
// which starts the job's workflow and deletes the start.
//
// Accepting a job therefore costs one database transaction, whatever
// Temporal is doing; a burst beyond what the workers can run waits in the
// outbox, not in the client's request. A start that is not made (the
// process stopped, Temporal was unreachable) stays in the outbox and any
// dispatcher makes it once its lease runs out. A start that can never be
// made (Temporal refuses it as invalid) fails its job instead.
type Dispatcher struct {
	cfg  DispatcherConfig
	pace *pacer
	// queue holds the starts taken, the least served tenant's first
	// (fairqueue.go); a sweep claims them in tenants' turns
	// (ClaimJobStarts), and Temporal's fairness keys share the workers
	// between tenants (jobPriority).
	queue *fairQueue
	// lightStarts bounds the starts of tenants served little lately that
	// skip the pacer (fairqueue.go).
	lightStarts *rate.Limiter
	wake        chan struct{}
	made        chan string // starts made, to clear from the outbox in batches
	// backlog is set while due starts may wait in the outbox beyond what
	// the queue holds; the starters then wake the sweep as the queue runs
	// low instead of leaving it to the next SweepInterval.
	backlog atomic.Bool
	// handOffs asks Run to call HandOff.
	handOffs chan struct{}
}

// NewDispatcher builds a Dispatcher; Run runs it.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Second
	}
	if cfg.MinRetryDelay <= 0 {
		cfg.MinRetryDelay = time.Second
	}
	if cfg.MaxRetryDelay < cfg.MinRetryDelay {
		cfg.MaxRetryDelay = max(time.Minute, cfg.MinRetryDelay)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HandOffGrace <= 0 {
		cfg.HandOffGrace = 5 * time.Second
	}
	return &Dispatcher{
		cfg:      cfg,
		pace:     newPacer(cfg.AcceptTarget),
		queue:    newFairQueue(queueSize),
		wake:     make(chan struct{}, 1),
		made:     make(chan string, queueSize),
		handOffs: make(chan struct{}, 1),

		lightStarts: rate.NewLimiter(lightStartRate, lightStartBurst),
	}
}

// Starts that skip the pacer, of tenants served little lately: at most
// lightStartRate a second, in bursts of lightStartBurst.
const (
	lightStartRate  = rate.Limit(20)
	lightStartBurst = lightServed
)

// Lease is when a start of tenant's that the API records now falls due
// for any dispatcher. While the queue is less than half full, or holds
// few of the tenant's starts, the start is leased to this process, which
// Offer then queues; beyond that it is due at once and a sweep takes it,
// in tenants' turns, when the queue has room.
// Either way accepting a job costs its request one transaction, however
// long the backlog.
func (d *Dispatcher) Lease(tenant string) time.Time {
	now := d.cfg.Now()
	if d.cfg.HandOff == nil && (d.queue.len() < d.queue.capacity/2 || d.queue.admitsLight(tenant)) {
		return now.Add(d.cfg.Lease)
	}
	return now
}

// Offer hands over a start the API just recorded, accepting its job
// having taken took. A start leased to this process is queued; one
// recorded due is left in the outbox for a sweep, which Offer wakes if
// the queue runs low (or, with HandOff, the workers' dispatchers are
// woken). Offer never waits: should the queue have filled since Lease,
// the start is handed back to the outbox in the background.
func (d *Dispatcher) Offer(start store.JobStart, took time.Duration) {
	d.pace.answered(took)
	if d.cfg.HandOff != nil {
		select {
		case d.handOffs <- struct{}{}:
		default: // one is pending: it covers this start too
		}
		return
	}
	if !start.NextAttemptAt.After(d.cfg.Now()) {
		d.backlog.Store(true)
		if d.queue.len() <= d.queue.capacity/4 {
			d.poke()
		}
		return
	}
	if d.queue.push(start) {
		return
	}
	go func() {
		d.release(start.JobID)
		d.backlog.Store(true)
		d.poke()
	}()
}

// Shed records a create the API shed with 429 because the outbox was
// full, having taken took: starts are paced by creates shed as by those
// accepted.
func (d *Dispatcher) Shed(took time.Duration) { d.pace.answered(took) }

// StartNow makes a job's start at once if it is still in the outbox (the
// API cancels a pending job's workflow, so it must exist first). A job
// whose workflow started already is not an error; one whose start is
// refused for good is failed, and the error is ErrNotStarted.
func (d *Dispatcher) StartNow(ctx context.Context, jobID string) error {
	start, err := d.cfg.Store.GetJobStart(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := d.start(ctx, *start); err != nil {
		return err
	}
	return d.clear([]string{jobID})
}

// Run starts workflows until ctx ends, then hands the starts it still
// holds back to the outbox.
func (d *Dispatcher) Run(ctx context.Context) {
	var starters sync.WaitGroup
	starters.Go(func() { d.pace.run(ctx, d.cfg.Logger) })
	if d.cfg.HandOff != nil {
		starters.Go(func() { d.handOff(ctx) })
	}
	for range d.cfg.Concurrency {
		starters.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-d.queue.ready:
					if err := d.waitTurn(ctx); err != nil {
						d.release(d.queue.pop().JobID)
						return
					}
					start := d.queue.pop()
					if d.queue.len() <= d.queue.capacity/4 && d.backlog.Load() {
						d.poke() // refill before the queue runs dry
					}
					if d.start(ctx, start) == nil {
						d.pace.startedJob()
						d.made <- start.JobID
					}
				}
			}
		})
	}
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		d.clearMade()
	}()
	d.sweep(ctx)
	starters.Wait()
	close(d.made)
	<-cleared
	d.handBack()
}

// clearMade deletes the starts made from the outbox, a batch at a time:
// what one delete finds waiting when the previous one ends.
func (d *Dispatcher) clearMade() {
	for id := range d.made {
		batch := []string{id}
	collect:
		for len(batch) < queueSize {
			select {
			case id, ok := <-d.made:
				if !ok {
					break collect
				}
				batch = append(batch, id)
			default:
				break collect
			}
		}
		if err := d.clear(batch); err != nil {
			d.cfg.Logger.Warn("clear job starts; they will be made again, which is harmless", "jobs", len(batch), "error", err)
		}
	}
}

func (d *Dispatcher) clear(ids []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return d.cfg.Store.DeleteJobStarts(ctx, ids)
}

// sweep takes due starts from the outbox into the queue: at once, every
// SweepInterval, and when the queue runs low while starts wait in the
// outbox.
func (d *Dispatcher) sweep(ctx context.Context) {
	ticker := time.NewTicker(d.cfg.SweepInterval)
	defer ticker.Stop()
	for {
		room := d.queue.capacity - d.queue.len()
		if room > 0 {
			// Cleared before the read: a start recorded due meanwhile
			// sets it again (Offer).
			d.backlog.Store(false)
			due := d.cfg.Now()
			if d.cfg.HandOff != nil {
				due = due.Add(-d.cfg.HandOffGrace) // the workers' to make first
			}
			claimed, err := d.cfg.Store.ClaimJobStarts(ctx, due, d.cfg.Lease, room)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("read the outbox of job starts", "error", err)
			}
			var full []string // Offers filled the room meanwhile
			for _, start := range claimed {
				if ctx.Err() != nil || !d.queue.push(start) {
					full = append(full, start.JobID)
				}
			}
			d.release(full...)
			if len(claimed) == room {
				d.backlog.Store(true)
				continue // more may be due
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-d.wake:
		}
	}
}

// tooLarge reports Temporal's refusal of a workflow input over its
// payload limit, the one refusal that is the job's own and will never
// change. Other invalid-argument refusals (a lowered limit, a task queue
// name) concern the deployment: those starts wait in the outbox, retried,
// until an operator fixes it.
func tooLarge(err error) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Message), "size exceeds limit")
}

// start starts one job's workflow; a failed start is due again after a
// backoff, and one that can never succeed fails its job (ErrNotStarted).
// The caller clears a start made.
func (d *Dispatcher) start(ctx context.Context, start store.JobStart) error {
	var in jobs.Submission
	var refused string // why the start can never succeed
	err := json.Unmarshal([]byte(start.Input), &in)
	// The workflow continues the trace of the request that created the
	// job (docs/operations.md, Traces).
	traced := tracing.Resume(ctx, in.TraceContext)
	if err != nil {
		refused = "its recorded start cannot be read"
	} else {
		in.SearchAttributes = d.cfg.SearchAttributes
		in.Generation = d.cfg.Generation
		sctx, cancel := context.WithTimeout(traced, startTimeout)
		_, err = d.cfg.Temporal.ExecuteWorkflow(sctx, startOptions(in, start.Priority, d.cfg.EagerStart), workflows.JobWorkflowName, in)
		cancel()
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			err = nil // it ran already: a start made twice (the delete below failed) runs once
		}
		if tooLarge(err) {
			refused = "Temporal refused its workflow: " + err.Error()
		}
	}
	if err == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	log := d.cfg.Logger.With("job", start.JobID)
	if id := tracing.TraceID(traced); id != "" {
		log = log.With("trace_id", id)
	}
	if refused != "" {
		log.Error("start job workflow refused for good; the job fails", "error", err)
		message := "the job could not be started and will not run: " + refused
		ferr := d.cfg.Store.FailJobStart(wctx, start.JobID, jobs.CodeNotStarted, message, d.cfg.Now())
		if ferr == nil {
			return fmt.Errorf("start job %s: %w: %w", start.JobID, ErrNotStarted, err)
		}
		log.Warn("record a job that cannot start as failed; its start is retried", "error", ferr)
	}
	if ctx.Err() != nil {
		d.release(start.JobID)
		return ctx.Err()
	}
	delay := d.retryDelay(start.Attempts)
	log.Error("start job workflow", "attempt", start.Attempts+1, "retry_in", delay, "error", err)
	if rerr := d.cfg.Store.RetryJobStart(wctx, start.JobID, d.cfg.Now().Add(delay)); rerr != nil {
		log.Warn("schedule a job start's retry; it is due when its lease ends", "error", rerr)
	}
	return fmt.Errorf("start job %s: %w", start.JobID, err)
}

// retryDelay doubles from MinRetryDelay up to MaxRetryDelay.
func (d *Dispatcher) retryDelay(attempts int) time.Duration {
	delay := d.cfg.MinRetryDelay
	for range min(attempts, 30) {
		delay *= 2
		if delay >= d.cfg.MaxRetryDelay {
			return d.cfg.MaxRetryDelay
		}
	}
	return delay
}

// waitTurn waits, holding a token of the queue, until its start may be
// made: once the pacer lets one go, so that a tenant arriving meanwhile
// takes its turn; or, for a tenant served little lately, once lightStarts
// allows one, also when it arrives while the pacer holds the starter back
// (the queue's light signal).
func (d *Dispatcher) waitTurn(ctx context.Context) error {
	for {
		var lightIn time.Duration
		if d.queue.nextLight() {
			r := d.lightStarts.Reserve()
			if lightIn = r.Delay(); lightIn == 0 {
				return nil
			}
			r.Cancel() // taken again, if still light, once the wait ends
		}
		paced, err := d.pace.waitOr(ctx, d.queue.lightArrived, lightIn)
		if err != nil || paced {
			return err
		}
	}
}

// handBack releases the starts left in the queue, so that the next
// dispatcher need not wait for their leases.
func (d *Dispatcher) handBack() {
	var ids []string
	for {
		select {
		case <-d.queue.ready:
			ids = append(ids, d.queue.pop().JobID)
			continue
		default:
		}
		break
	}
	d.release(ids...)
}

func (d *Dispatcher) release(ids ...string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := d.cfg.Store.ReleaseJobStarts(ctx, ids, d.cfg.Now()); err != nil {
		d.cfg.Logger.Warn("hand job starts back to the outbox; they are due when their leases end", "jobs", len(ids), "error", err)
	}
}

// handOff wakes the other processes' dispatchers after Offers, one call
// for the Offers made while the last one ran, until ctx ends.
func (d *Dispatcher) handOff(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.handOffs:
		}
		if err := d.cfg.HandOff(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("wake the workers' dispatchers; they find the new starts when they next sweep", "error", err)
		}
	}
}

// Wake has the dispatcher read the outbox now rather than at its next
// SweepInterval, because starts fell due (another process's HandOff).
func (d *Dispatcher) Wake() { d.poke() }

func (d *Dispatcher) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// jobPriority is the Temporal priority of a job's workflow, which its
// activities inherit: the job's priority key, and its tenant as fairness
// key with the tenant's weight, so that one tenant's backlog does not hold
// up another's jobs on a server with fairness (docs/operations.md,
// Fairness between tenants).
func jobPriority(in jobs.Submission, priority int) temporal.Priority {
	weight := in.FairnessWeight
	if weight <= 0 {
		weight = 1
	}
	return temporal.Priority{PriorityKey: priority, FairnessKey: in.Tenant, FairnessWeight: float32(weight)}
}

// startOptions are the options of a job's workflow start: the job id is
// the workflow id, a second start of a running job joins it, and a
// finished job is never run again. A job whose workflow keeps search
// attributes starts with them, and with its summary for the Temporal UI.
func startOptions(in jobs.Submission, priority int, eager bool) client.StartWorkflowOptions {
	opts := client.StartWorkflowOptions{
		ID:                       workflows.JobWorkflowID(in.JobID),
		TaskQueue:                workflows.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		EnableEagerStart:         eager,
		Priority:                 jobPriority(in, priority),
		StaticSummary:            workflows.StartSummary(in),
	}
	if in.SearchAttributes {
		opts.TypedSearchAttributes = workflows.StartSearchAttributes(in)
	}
	return opts
}
