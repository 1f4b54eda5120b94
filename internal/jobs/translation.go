package jobs

import (
	"encoding/json"
)

func init() { register[Translation](Translations) }

// Translation is a translation job's input and options.
type Translation struct {
	Input   TranslationInput
	Options TranslationOptions
}

func (t *Translation) parts() (input, options any) { return &t.Input, &t.Options }

func (t *Translation) validate() error {
	in, opts := t.Input, t.Options
	return firstError(
		oneOf(in.Type, ptrInput+"/type", true, "text", "document"),
		requiredWhen(in.Type == "text", in.Content, ptrInput+"/content", "when type is text"),
		forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use content"),
		requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
		forbiddenWhen(in.Type == "document", in.Content, ptrInput+"/content", "when type is document; use url"),
		mediaURL(in.URL, ptrInput+"/url", false),
		required(in.TargetLanguage, ptrInput+"/target_language"),
		languageCode(in.TargetLanguage, ptrInput+"/target_language", false),
		languageCode(opts.SourceLanguage, ptrOptions+"/source_language", true),
		oneOf(opts.Formality, ptrOptions+"/formality", false, "default", "formal", "informal"),
		priority(opts.Priority),
	)
}

// Requirements asks for the target language, the source language or its
// detection, and formality unless it is the default.
func (t *Translation) Requirements() Requirements {
	req := Requirements{Service: Translations, TargetLanguage: t.Input.TargetLanguage}
	if t.Options.SourceLanguage == "" || t.Options.SourceLanguage == "auto" {
		req.Features = append(req.Features, "language_detection")
	} else {
		req.SourceLanguage = t.Options.SourceLanguage
	}
	if t.Options.Formality != "" && t.Options.Formality != "default" {
		req.Features = append(req.Features, "formality")
	}
	return req
}

func (t *Translation) Priority() int { return taskPriority(t.Options.Priority) }

// ResultTypes offers a translated text also as plain text.
func (t *Translation) ResultTypes() (offered []string, preferred string) {
	if t.Input.Type == "text" {
		return []string{MediaJSON, MediaText}, MediaJSON
	}
	return jsonOnly()
}

func (t *Translation) Render(mediaType string, result []byte) ([]byte, error) {
	switch {
	case mediaType == MediaJSON:
		return result, nil
	case mediaType == MediaText && t.Input.Type == "text":
		var r TranslationResult
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, err
		}
		return []byte(r.Content), nil
	}
	return nil, notOffered(Translations, mediaType)
}
