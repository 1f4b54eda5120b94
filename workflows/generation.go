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
// A change after generation 1 calls j.version with a change id not in
// generationOne, which is a plain GetVersion for every job. When enough
// such changes pile up, add generation 2 (the list then says their
// versions) and bump Generation; keep every earlier generation's list.
const Generation = 1

// StampedGeneration is the generation the processes that start jobs
// stamp on them. It lags Generation by a release: a worker of the
// previous release, met during a rolling upgrade or a rollback, must
// understand every job it may replay, so a new generation is stamped only
// by the release after the one that introduced it (docs/operations.md,
// Replaying histories). Generation 1 is understood by every build since
// the first release, so it is stamped from that release on.
const StampedGeneration = 1

// generationOne is the version of each change at generation 1.
var generationOne = map[string]workflow.Version{
	searchAttributesChange: 2,
	webhooksChange:         1,
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
