package workflows

import "go.temporal.io/sdk/workflow"

// Generation is the generation of the job workflow's code. This release
// understands generation 1 but does not stamp it on new jobs yet: an older
// worker replaying a job without markers would take the old code paths,
// so stamping waits for a release after every worker runs this one
// (docs/operations.md, Replaying histories). A job started at generation
// 1 (jobs.Submission.Generation, which the process that starts it will
// set) takes every change listed in generationOne at its version
// there, without a version marker: a marker costs two history events and
// a visibility write (the SDK upserts TemporalChangeVersion with it) on
// every job. Jobs started before generations (0) call GetVersion as they
// always did, so their histories replay unchanged.
//
// A change after generation 1 calls j.version with a change id not in
// generationOne, which is a plain GetVersion for every job. When enough
// such changes pile up, add generation 2 (the list then says their
// versions) and bump Generation; keep every earlier generation's list.
const Generation = 1

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
