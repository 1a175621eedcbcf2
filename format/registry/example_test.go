package registry_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/weirflow/weir/format/registry"
)

// A registry on a free loopback port, used through franz-go's client as a
// Kafka serializer would use Confluent's.
func Example() {
	reg := registry.New()
	if err := reg.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer reg.Close()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl, err := sr.NewClient(sr.URLs(reg.URL()), sr.HTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	schema := sr.Schema{Schema: `{"type":"record","name":"bid","fields":[{"name":"price","type":"long"}]}`}
	id, err := cl.RegisterSchema(ctx, "bids-value", schema, -1, -1)
	if err != nil {
		panic(err)
	}
	latest, err := cl.SchemaByVersion(ctx, "bids-value", -1)
	if err != nil {
		panic(err)
	}
	fmt.Println(id, latest.Version, latest.Schema.Schema)
	// Output:
	// 1 1 {"type":"record","name":"bid","fields":[{"name":"price","type":"long"}]}
}
