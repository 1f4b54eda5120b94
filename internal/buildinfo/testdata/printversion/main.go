// Command printversion prints buildinfo.Read() as gateway version does;
// TestLinkerVersion builds it with -ldflags -X.
package main

import (
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/buildinfo"
)

func main() {
	fmt.Println(buildinfo.Read())
}
