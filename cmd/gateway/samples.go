//go:build !nodev

package main

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// speechVideo is a 7-second MP4 (H.264 and AAC) of a test pattern with
// espeak-ng saying "Hello from the AI job gateway. This video is a sample
// for transcription." Made with:
//
//	espeak-ng -w speech.wav "Hello from the AI job gateway. This video is a sample for transcription."
//	ffmpeg -f lavfi -i testsrc=size=320x240:rate=25 -i speech.wav -shortest -map 0:v -map 1:a \
//	  -c:v libx264 -preset veryslow -crf 35 -pix_fmt yuv420p -c:a aac -b:a 32k -ac 1 -ar 16000 -movflags +faststart speech.mp4
//
//go:embed samples/speech.mp4
var speechVideo []byte

// slidesVideo is a 9-second silent MP4 of three slides, two hard cuts,
// with the text "AI JOB GATEWAY", "SCENES AND TEXT" and "THE END", for the
// local media engine's scenes and ocr. Made with:
//
//	ffmpeg -f lavfi -i "color=c=navy:s=640x360:d=3:r=25[a];color=c=white:s=640x360:d=3:r=25[b];color=c=navy:s=640x360:d=3:r=25[c];\
//	  [a]drawtext=text='AI JOB GATEWAY':fontsize=48:fontcolor=white:x=60:y=150[a2];\
//	  [b]drawtext=text='SCENES AND TEXT':fontsize=48:fontcolor=black:x=60:y=150[b2];\
//	  [c]drawtext=text='THE END':fontsize=48:fontcolor=white:x=60:y=150[c2];[a2][b2][c2]concat=n=3:v=1:a=0" \
//	  -c:v libx264 -preset veryslow -crf 30 -pix_fmt yuv420p -movflags +faststart slides.mp4
//
//go:embed samples/slides.mp4
var slidesVideo []byte

// registerSamples serves sample media under /dev/samples/ for `gateway
// dev`, so the README walkthrough has URLs the providers can reach on a
// machine without internet access.
func registerSamples(r gin.IRouter) {
	samples := map[string][]byte{
		"speech.mp4":   speechVideo,
		"slides.mp4":   slidesVideo,
		"tone.wav":     sineWAV(440, 2, 16000),
		"document.txt": []byte("Hello from the AI job gateway.\nThis is a sample document for translation jobs.\n"),
	}
	serve := func(c *gin.Context) {
		name := c.Param("name")
		data, ok := samples[name]
		if !ok {
			c.Status(http.StatusNotFound)
			return
		}
		http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(data))
	}
	r.GET("/dev/samples/:name", serve)
	r.HEAD("/dev/samples/:name", serve)
}

// sineWAV renders seconds of a mono 16-bit PCM tone as a WAV file.
func sineWAV(frequency float64, seconds, sampleRate int) []byte {
	samples := seconds * sampleRate
	le := binary.LittleEndian
	var b bytes.Buffer
	b.WriteString("RIFF")
	b.Write(le.AppendUint32(nil, uint32(36+samples*2)))
	b.WriteString("WAVEfmt ")
	b.Write(le.AppendUint32(nil, 16))                   // fmt chunk size
	b.Write(le.AppendUint16(nil, 1))                    // PCM
	b.Write(le.AppendUint16(nil, 1))                    // mono
	b.Write(le.AppendUint32(nil, uint32(sampleRate)))   // sample rate
	b.Write(le.AppendUint32(nil, uint32(sampleRate*2))) // byte rate
	b.Write(le.AppendUint16(nil, 2))                    // block align
	b.Write(le.AppendUint16(nil, 16))                   // bits per sample
	b.WriteString("data")
	b.Write(le.AppendUint32(nil, uint32(samples*2)))
	for i := range samples {
		v := int16(math.Sin(2*math.Pi*frequency*float64(i)/float64(sampleRate)) * 0.3 * math.MaxInt16)
		b.Write(le.AppendUint16(nil, uint16(v)))
	}
	return b.Bytes()
}
