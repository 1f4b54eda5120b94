package jobs

// Requirements is what a job asks of a provider's capability.
type Requirements struct {
	Service ServiceID
	// Features the capability must list.
	Features []string
	// Language the capability's languages must accept (transcriptions).
	Language string
	// SourceLanguage and TargetLanguage for translations; "" when detected.
	SourceLanguage string
	TargetLanguage string
	// Model the capability's models must list (llm-tasks, when pinned).
	Model string
	// JSONSchema asks for a model that takes a JSON schema for its
	// output (llm-tasks with response_format json_schema).
	JSONSchema bool
	// TranslateToEnglish asks for a transcriptions capability that
	// translates into English (transcriptions with
	// options.translate_to_english).
	TranslateToEnglish bool
	// VideoLanguage is a video analysis's language ("auto" or "" when
	// detected); capabilities list no video languages, so only policy
	// conditions check it.
	VideoLanguage string
}

// JobLanguages are the languages a policy's language condition is checked
// against: the transcription or video language, or a translation's target
// and (when given) source language. Auto-detected languages are unknown.
func (r Requirements) JobLanguages() []string {
	var out []string
	for _, l := range []string{r.Language, r.SourceLanguage, r.TargetLanguage, r.VideoLanguage} {
		if l != "" && l != "auto" {
			out = append(out, l)
		}
	}
	return out
}
