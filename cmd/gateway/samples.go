package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// registerSamples serves sample media under /dev/samples/ for `gateway
// dev`, so the README walkthrough has URLs the sandbox providers can reach
// on a machine without internet access.
func registerSamples(r gin.IRouter) {
	samples := map[string][]byte{
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
