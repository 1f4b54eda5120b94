package jobs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// valid are an input and options each service accepts.
var valid = map[jobs.ServiceID][2]string{
	jobs.Transcriptions: {`{"type":"audio","url":"https://m.test/a.mp3"}`, `{"language":"de","diarization":true,"priority":"high"}`},
	jobs.Translations:   {`{"type":"text","content":"Hallo","target_language":"pt-BR"}`, `{"source_language":"auto","formality":"formal","priority":"low"}`},
	jobs.VideoAnalyses:  {`{"url":"https://m.test/v.mp4","features":["labels","ocr"]}`, `{"language":"auto","confidence_threshold":0.75}`},
	jobs.LLMTasks:       {`{"type":"text","text":"Fox","prompt":"Summarise."}`, `{"model":"m1"}`},
}

func spec(t *testing.T, id jobs.ServiceID) jobs.Service {
	t.Helper()
	s, ok := jobs.LookupService(string(id))
	require.True(t, ok, "no service %s", id)
	require.Equal(t, id, s.ID)
	return s
}

func parse(t *testing.T, id jobs.ServiceID, input, options string) jobs.Request {
	t.Helper()
	r, err := spec(t, id).Parse(json.RawMessage(input), json.RawMessage(options))
	require.NoError(t, err, "%s %s %s", id, input, options)
	return r
}

func TestEveryServiceHasADescriptor(t *testing.T) {
	t.Parallel()
	var ids []jobs.ServiceID
	for _, svc := range jobs.Services() {
		ids = append(ids, svc.ID)
		require.NotEmpty(t, svc.Name, svc.ID)
		require.NotEmpty(t, svc.Usage, svc.ID)
		require.Equal(t, svc.Media.Fetch, svc.Media.UnreadableCode != "", "%s: media that is fetched needs an unreadable code", svc.ID)
		require.Contains(t, valid, svc.ID, "add a valid request of %s to this test", svc.ID)
		parse(t, svc.ID, valid[svc.ID][0], valid[svc.ID][1])
	}
	require.Equal(t, []jobs.ServiceID{jobs.Transcriptions, jobs.Translations, jobs.VideoAnalyses, jobs.LLMTasks}, ids, "the documented order")
	_, ok := jobs.LookupService("images")
	require.False(t, ok)
}

func TestHasMedia(t *testing.T) {
	t.Parallel()
	cases := []struct {
		service jobs.ServiceID
		input   string
		want    bool
	}{
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a.mp3"}`, true},
		{jobs.Transcriptions, `{"type":"audio"}`, false},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v.mp4","features":["labels"]}`, true},
		{jobs.Translations, `{"type":"document","url":"https://m.test/d.docx","target_language":"de"}`, true},
		{jobs.Translations, `{"type":"text","content":"Hallo","target_language":"de"}`, false},
		{jobs.LLMTasks, `{"type":"document","url":"https://m.test/d.pdf","prompt":"Sum."}`, false},
		{jobs.Transcriptions, `not json`, false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, jobs.MustService(c.service).HasMedia(json.RawMessage(c.input)), "%s %s", c.service, c.input)
	}
	require.Equal(t, 2, jobs.AudioTrack(json.RawMessage(`{"audio_track":2}`)))
	require.Equal(t, 0, jobs.AudioTrack(json.RawMessage(`{}`)))
}

func TestParseErrorsNameThePointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		service        jobs.ServiceID
		input, options string
		pointer, msg   string
	}{
		{jobs.Transcriptions, ``, `{}`, "/input", "is required"},
		{jobs.Transcriptions, `null`, `{}`, "/input", "is required"},
		{jobs.Transcriptions, `[]`, `{}`, "/input", "must be an object"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a","URL":"x"}`, `{}`, "/input/URL", "is not a known field"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `"fast"`, "/options", "must be an object"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `{"turbo":true}`, "/options/turbo", "is not a known field"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `{"timestamps":"yes"}`, "/options/timestamps", "must be a boolean"},
		{jobs.Transcriptions, `{"url":"https://m.test/a"}`, `{}`, "/input/type", "is required (one of video, audio)"},
		{jobs.Transcriptions, `{"type":"Audio","url":"https://m.test/a"}`, `{}`, "/input/type", `must be one of video, audio, not "Audio"`},
		{jobs.Transcriptions, `{"type":"audio"}`, `{}`, "/input/url", "is required"},
		{jobs.Transcriptions, `{"type":"audio","url":"ftp://m.test/a"}`, `{}`, "/input/url", "must be an absolute http or https URL"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a","audio_track":-1}`, `{}`, "/input/audio_track", "must be a zero-based track number (0 or more)"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a","audio_track":1.5}`, `{}`, "/input/audio_track", "must be an integer"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `{"language":"en_US"}`, "/options/language", "must be a BCP 47 language code such as en or pt-BR"},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `{"format":"txt"}`, "/options/format", `must be one of srt, vtt, json, not "txt"`},
		{jobs.Transcriptions, `{"type":"audio","url":"https://m.test/a"}`, `{"priority":"urgent"}`, "/options/priority", `must be one of low, standard, high, not "urgent"`},

		{jobs.Translations, `{"target_language":"de"}`, `{}`, "/input/type", "is required (one of text, document)"},
		{jobs.Translations, `{"type":"text","target_language":"de"}`, `{}`, "/input/content", "is required when type is text"},
		{jobs.Translations, `{"type":"text","content":"hi","url":"https://m.test/d","target_language":"de"}`, `{}`, "/input/url", "is not allowed when type is text; use content"},
		{jobs.Translations, `{"type":"document","target_language":"de"}`, `{}`, "/input/url", "is required when type is document"},
		{jobs.Translations, `{"type":"document","url":"https://m.test/d","content":"hi","target_language":"de"}`, `{}`, "/input/content", "is not allowed when type is document; use url"},
		{jobs.Translations, `{"type":"text","content":"hi"}`, `{}`, "/input/target_language", "is required"},
		{jobs.Translations, `{"type":"text","content":"hi","target_language":"auto"}`, `{}`, "/input/target_language", "must be a BCP 47 language code such as en or pt-BR"},
		{jobs.Translations, `{"type":"text","content":"hi","target_language":"de"}`, `{"source_language":"english"}`, "/options/source_language", "must be a BCP 47 language code such as en or pt-BR, or auto"},
		{jobs.Translations, `{"type":"text","content":"hi","target_language":"de"}`, `{"formality":"casual"}`, "/options/formality", `must be one of default, formal, informal, not "casual"`},

		{jobs.VideoAnalyses, `{"url":"https://m.test/v"}`, `{}`, "/input/features", "is required and must list at least one of labels, scenes, faces, speech_to_text, ocr, content_moderation, sentiment, topics, brands, summary"},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v","features":["labels","smell"]}`, `{}`, "/input/features/1", `must be one of labels, scenes, faces, speech_to_text, ocr, content_moderation, sentiment, topics, brands, summary, not "smell"`},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v","features":["ocr","labels","ocr"]}`, `{}`, "/input/features/2", `repeats "ocr"`},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v","features":"ocr"}`, `{}`, "/input/features", "must be an array of strings"},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v","features":["ocr"]}`, `{"confidence_threshold":1.5}`, "/options/confidence_threshold", "must be between 0 and 1"},
		{jobs.VideoAnalyses, `{"url":"https://m.test/v","features":["ocr"]}`, `{"language":"xx-"}`, "/options/language", "must be a BCP 47 language code such as en or pt-BR, or auto"},

		{jobs.LLMTasks, `{"type":"text","prompt":"p"}`, `{}`, "/input/text", "is required when type is text"},
		{jobs.LLMTasks, `{"type":"text","text":"t","url":"https://m.test/d","prompt":"p"}`, `{}`, "/input/url", "is not allowed when type is text; use text"},
		{jobs.LLMTasks, `{"type":"document","prompt":"p"}`, `{}`, "/input/url", "is required when type is document"},
		{jobs.LLMTasks, `{"type":"text","text":"t","prompt":"  "}`, `{}`, "/input/prompt", "is required"},
		{jobs.LLMTasks, `{"type":"text","text":"t","prompt":"p"}`, `{"creativity":"wild"}`, "/options/creativity", `must be one of precise, balanced, creative, not "wild"`},
		{jobs.LLMTasks, `{"type":"text","text":"t","prompt":"p"}`, `{"priority":"high"}`, "/options/priority", "is not a known field"},
		{jobs.LLMTasks, `{"type":"messages"}`, `{}`, "/input/messages", "is required when type is messages (at least one message of role user)"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}],"prompt":"p"}`, `{}`, "/input/prompt", "is not allowed when type is messages; put it in a user message"},
		{jobs.LLMTasks, `{"type":"text","text":"t","prompt":"p","messages":[{"role":"user","content":"hi"}]}`, `{}`, "/input/messages", "is only for type messages"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"},{"role":"system","content":"s"}]}`, `{}`, "/input/messages/1/role", "system is only for the first message"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"tool","content":"x"}]}`, `{}`, "/input/messages/0/role", `must be one of system, user, assistant, not "tool"`},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":" "}]}`, `{}`, "/input/messages/0/content", "is required"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}]}`, `{}`, "/input/messages", "needs at least one message of role user"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi","name":"x"}]}`, `{}`, "/input/messages/0/name", "is not a known field"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"max_tokens":0}`, "/options/max_tokens", "must be a whole number from 1 to 1000000"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"temperature":2.5}`, "/options/temperature", "must be a number from 0 to 2"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"temperature":1,"creativity":"precise"}`, "/options/temperature", "is not allowed with creativity; give one of them"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"stop":["a","b","c","d","e"]}`, "/options/stop", "has 5 sequences; at most 4"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"stop":["a",""]}`, "/options/stop/1", "must be 1 to 200 bytes"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"response_format":{"type":"yaml"}}`, "/options/response_format/type", `must be one of text, json_object, json_schema, not "yaml"`},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"response_format":{"type":"json_schema"}}`, "/options/response_format/json_schema", "is required when type is json_schema"},
		{jobs.LLMTasks, `{"type":"messages","messages":[{"role":"user","content":"hi"}]}`, `{"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, "/options/response_format/json_schema/name", "is required"},
	}
	for _, tc := range cases {
		_, err := spec(t, tc.service).Parse(json.RawMessage(tc.input), json.RawMessage(tc.options))
		var fe *jobs.FieldError
		require.True(t, errors.As(err, &fe), "%s %s %s: %v", tc.service, tc.input, tc.options, err)
		require.Equal(t, tc.pointer, fe.Pointer, "%s %s %s", tc.service, tc.input, tc.options)
		require.Equal(t, tc.msg, fe.Message, "%s %s %s", tc.service, tc.input, tc.options)
		require.Equal(t, tc.pointer+": "+tc.msg, err.Error())
	}
}

func TestRequirements(t *testing.T) {
	t.Parallel()
	req := parse(t, jobs.Transcriptions, `{"type":"audio","url":"https://x.test/a"}`, `{"diarization":true,"language":"de"}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"timestamps", "diarization"}, Language: "de"}, req,
		"timestamps default to true; a given language needs no detection")

	req = parse(t, jobs.Transcriptions, `{"type":"audio","url":"https://x.test/a"}`, `{"timestamps":false}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.Transcriptions, Features: []string{"language_detection"}}, req)

	req = parse(t, jobs.Translations, `{"type":"text","content":"hi","target_language":"de"}`, `{"formality":"formal","source_language":"en"}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.Translations, Features: []string{"formality"}, SourceLanguage: "en", TargetLanguage: "de"}, req)

	req = parse(t, jobs.Translations, `{"type":"text","content":"hi","target_language":"de"}`, `{"formality":"default","source_language":"auto"}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.Translations, Features: []string{"language_detection"}, TargetLanguage: "de"}, req)

	req = parse(t, jobs.VideoAnalyses, `{"url":"https://x.test/v","features":["labels","ocr"]}`, `{"language":"fr"}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.VideoAnalyses, Features: []string{"labels", "ocr"}, VideoLanguage: "fr"}, req)

	req = parse(t, jobs.LLMTasks, `{"type":"text","text":"t","prompt":"p"}`, `{"model":"m1"}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.LLMTasks, Model: "m1"}, req)
}

func TestPriority(t *testing.T) {
	t.Parallel()
	for _, id := range []jobs.ServiceID{jobs.Transcriptions, jobs.Translations, jobs.VideoAnalyses} {
		for priority, want := range map[string]int{"high": 1, "standard": 3, "low": 5} {
			var opts map[string]any
			require.NoError(t, json.Unmarshal([]byte(valid[id][1]), &opts))
			opts["priority"] = priority
			raw, err := json.Marshal(opts)
			require.NoError(t, err)
			require.Equal(t, want, parse(t, id, valid[id][0], string(raw)).Priority(), "%s %s", id, priority)
		}
		require.Equal(t, 3, parse(t, id, valid[id][0], `{}`).Priority(), "%s without priority", id)
	}
	// llm-tasks have no priority option.
	require.Equal(t, 3, parse(t, jobs.LLMTasks, valid[jobs.LLMTasks][0], "").Priority())
	// The priority is the decoded option, however JSON spells it, and not
	// a string inside another value.
	require.Equal(t, 1, parse(t, jobs.Translations, valid[jobs.Translations][0], `{"priority":"hig\u0068"}`).Priority())
	require.Equal(t, 5, parse(t, jobs.Translations, valid[jobs.Translations][0], `{"\u0070riority" : "low"}`).Priority())
	require.Equal(t, 3, parse(t, jobs.Translations, `{"type":"text","content":"\"priority\":\"high\"","target_language":"de"}`, `{}`).Priority())
}

func TestResultTypes(t *testing.T) {
	t.Parallel()
	all := []string{jobs.MediaJSON, jobs.MediaSRT, jobs.MediaVTT}
	cases := []struct {
		service        jobs.ServiceID
		input, options string
		offered        []string
		preferred      string
	}{
		{jobs.Transcriptions, valid[jobs.Transcriptions][0], `{}`, all, jobs.MediaJSON},
		{jobs.Transcriptions, valid[jobs.Transcriptions][0], `{"format":"json"}`, all, jobs.MediaJSON},
		{jobs.Transcriptions, valid[jobs.Transcriptions][0], `{"format":"srt"}`, all, jobs.MediaSRT},
		{jobs.Transcriptions, valid[jobs.Transcriptions][0], `{"format":"vtt"}`, all, jobs.MediaVTT},
		{jobs.Translations, `{"type":"text","content":"hi","target_language":"de"}`, `{}`, []string{jobs.MediaJSON, jobs.MediaText}, jobs.MediaJSON},
		{jobs.Translations, `{"type":"document","url":"https://m.test/d","target_language":"de"}`, `{}`, []string{jobs.MediaJSON}, jobs.MediaJSON},
		{jobs.VideoAnalyses, valid[jobs.VideoAnalyses][0], `{}`, []string{jobs.MediaJSON}, jobs.MediaJSON},
		{jobs.LLMTasks, valid[jobs.LLMTasks][0], `{}`, []string{jobs.MediaJSON}, jobs.MediaJSON},
	}
	for _, tc := range cases {
		offered, preferred := parse(t, tc.service, tc.input, tc.options).ResultTypes()
		require.Equal(t, tc.offered, offered, "%s %s %s", tc.service, tc.input, tc.options)
		require.Equal(t, tc.preferred, preferred, "%s %s %s", tc.service, tc.input, tc.options)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	transcript := []byte(`{"format":"srt","duration":2,"segments":[{"start":0,"end":1.5,"text":"a <b>","speaker":"Anna"}]}`)
	r := parse(t, jobs.Transcriptions, valid[jobs.Transcriptions][0], `{"format":"srt"}`)
	for mediaType, want := range map[string]string{
		jobs.MediaJSON: string(transcript),
		jobs.MediaSRT:  "1\n00:00:00,000 --> 00:00:01,500\nAnna: a <b>\n\n",
		jobs.MediaVTT:  "WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.500\n<v Anna>a &lt;b&gt;\n\n",
	} {
		got, err := r.Render(mediaType, transcript)
		require.NoError(t, err, mediaType)
		require.Equal(t, want, string(got), mediaType)
	}
	_, err := r.Render(jobs.MediaSRT, []byte(`{"segments":"x"}`))
	require.Error(t, err, "a result that does not decode")
	_, err = r.Render(jobs.MediaText, transcript)
	require.Error(t, err, "a type not offered")

	translation := []byte(`{"source_language":"en","target_language":"de","content":"Guten <b>Morgen</b>","character_count":7}`)
	r = parse(t, jobs.Translations, `{"type":"text","content":"Good morning","target_language":"de"}`, `{}`)
	got, err := r.Render(jobs.MediaText, translation)
	require.NoError(t, err)
	require.Equal(t, "Guten <b>Morgen</b>", string(got))
	got, err = r.Render(jobs.MediaJSON, translation)
	require.NoError(t, err)
	require.Equal(t, string(translation), string(got))
	_, err = parse(t, jobs.Translations, `{"type":"document","url":"https://m.test/d","target_language":"de"}`, `{}`).Render(jobs.MediaText, translation)
	require.Error(t, err, "a document's translation is not offered as text")

	for _, id := range []jobs.ServiceID{jobs.VideoAnalyses, jobs.LLMTasks} {
		result := []byte(`{"summary":"s"}`)
		got, err := parse(t, id, valid[id][0], valid[id][1]).Render(jobs.MediaJSON, result)
		require.NoError(t, err)
		require.Equal(t, string(result), string(got))
		_, err = parse(t, id, valid[id][0], valid[id][1]).Render(jobs.MediaSRT, result)
		require.Error(t, err, id)
	}
}

func TestLoadReadsARecordedJob(t *testing.T) {
	t.Parallel()
	// A recorded job was validated when accepted: Load neither validates
	// again nor rejects members it does not know.
	r, err := spec(t, jobs.Transcriptions).Load(json.RawMessage(`{"url":"x","legacy":1}`), json.RawMessage(`{"language":"de","priority":"low","format":"vtt","old":true}`))
	require.NoError(t, err)
	require.Equal(t, 5, r.Priority())
	require.Equal(t, "de", r.Requirements().Language)
	_, preferred := r.ResultTypes()
	require.Equal(t, jobs.MediaVTT, preferred)

	r, err = spec(t, jobs.LLMTasks).Load(json.RawMessage(`{}`), nil)
	require.NoError(t, err)
	require.Equal(t, jobs.Requirements{Service: jobs.LLMTasks}, r.Requirements())

	_, err = spec(t, jobs.Translations).Load(json.RawMessage(`{"type":"text"}`), json.RawMessage(`{"formality":1}`))
	require.Error(t, err)
	_, err = spec(t, jobs.VideoAnalyses).Load(json.RawMessage(`[`), nil)
	require.Error(t, err)
}
