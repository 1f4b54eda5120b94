package workflows

import "go.temporal.io/sdk/workflow"

// Generation is the newest generation of the job workflow's code this
// release understands. A job started at generation 1
// (jobs.Submission.Generation) takes every change listed in generationOne
// at its version there, without a version marker: a marker costs two
// history events and a visibility write (the SDK upserts
// TemporalChangeVersion with it) on every job. Jobs started before
// generations (0) call GetVersion as they always did, so their histories
// replay unchanged.
//
// From generation 2 on, a change is taken only by the jobs stamped with
// its generation or a later one (j.since), never through GetVersion: a
// job's path is fixed by its input, so no marker is recorded, and older
// jobs keep the old path. Such a change bumps Generation; the changes of
// each generation are listed below. (A change may still call j.version
// with a change id not in generationOne, a plain GetVersion for every
// job, when it must reach the jobs already running.)
//
// Generation 2: a job whose provider call runs as a local activity in
// the workflow task that routed it, with no webhook and no progress
// events, is projected once, as completed or failed, instead of as
// processing and then again (job.go, startProcessing).
//
// Generation 3: such a job's call, when it succeeds, is projected as
// completed by the call's own local activity (CallAndComplete) instead
// of a SaveJob of its own (job.go, callAndComplete).
//
// Generation 4: the workflow's result leaves out the job's documents,
// which other events of its history hold: the input, options and client
// meta (the start event) and the result (the provider call's); job.go,
// result.
const Generation = 4

// StampedGeneration is the generation the processes that start jobs
// stamp on them (--job-generation's default). It lags Generation by a
// release: a worker of the previous release, met during a rolling
// upgrade or a rollback, must understand every job it may replay, so a
// generation is stamped by default only by the release after the one
// that introduced it (docs/operations.md, Replaying histories). No
// release came before the first, which understands generations 1 to 4,
// so the first release stamps 4; a generation 5 would be stamped by the
// release after the one that adds it.
const StampedGeneration = 4

// generationOne is the version of each change at generation 1.
var generationOne = map[string]workflow.Version{
	searchAttributesChange: 2,
	webhookDocumentsChange: 1,
	asyncCallChange:        1,
	localCallChange:        1,
	drainOnCancelChange:    1,
	mediaStageChange:       1,
	providerCallbackChange: 1,
}

// version is workflow.GetVersion(ctx, change, DefaultVersion, max), but a
// job of generation 1 takes the change's generation-1 version without
// recording a marker.
func (j *job) version(ctx workflow.Context, change string, max workflow.Version) workflow.Version {
	if j.in.Generation >= 1 {
		if v, ok := generationOne[change]; ok {
			return v
		}
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, max)
}

// since reports whether the job was stamped with generation or a later
// one, and so takes that generation's changes.
func (j *job) since(generation int) bool {
	return j.in.Generation >= generation
}
