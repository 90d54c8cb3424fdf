package kafkacompat_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const (
	keySaslHandshake    int16 = 17
	keySaslAuthenticate int16 = 36
)

// TestSASLPlainClients: with `strata dev --kafka --auth FILE`, the Java client and
// librdkafka authenticate with SASL/PLAIN (username the principal's name, password its
// token) and produce and consume the topic their grants allow; a principal without
// `append` on it gets TOPIC_AUTHORIZATION_FAILED and a wrong token
// SASL_AUTHENTICATION_FAILED.
func TestSASLPlainClients(t *testing.T) {
	requireAPIs(t, startGateway(t).addr, keySaslHandshake, keySaslAuthenticate)
	const count = 20
	topic := uniqueName(t)
	grp, rdTopic := topic+"-g", topic+"-rd"
	appToken, readerToken := uniqueToken(), uniqueToken()
	auth := map[string]any{"principals": map[string]any{
		appToken: map[string]any{"name": "app", "allow": []map[string]any{
			{"resource": "topic:" + topic, "ops": []string{"create", "describe", "append", "read"}},
			{"resource": "topic:" + rdTopic, "ops": []string{"create", "describe", "append", "read"}},
			{"resource": "group:" + grp, "ops": []string{"consume", "describe", "reset"}},
			// librdkafka's assigned consumer still names a group (rdkafka_check.py's).
			{"resource": "group:" + rdTopic + "-unused", "ops": []string{"consume", "describe"}},
		}},
		readerToken: map[string]any{"name": "reader", "allow": []map[string]any{
			{"resource": "topic:" + topic, "ops": []string{"describe", "read"}},
		}},
	}}
	b, err := json.Marshal(auth)
	must(t, err, "auth file")
	file := filepath.Join(t.TempDir(), "auth.json")
	must(t, os.WriteFile(file, b, 0o600), "auth file")
	gw := target{name: "strata", addr: startGateway(t, "--auth", file).addr}
	as := func(user, pass string) *kgo.Client {
		return gw.client(t, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1))
	}
	createTopic(t, kadm.NewClient(as("app", appToken)), topic, 3)
	createTopic(t, kadm.NewClient(as("app", appToken)), rdTopic, 3)
	err = as("reader", readerToken).ProduceSync(ctxT(t), &kgo.Record{Value: []byte("x")}).FirstErr()
	if errName(err) != kerr.TopicAuthorizationFailed.Message {
		t.Errorf("produce without append: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := as("app", uniqueToken()).ProduceSync(ctxT(t), &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("a wrong token produced")
	}
	_, idempotent := advertised(t, gw.addr)[keyInitProducerID]
	_, groups := advertised(t, gw.addr)[keyJoinGroup]
	t.Run("java", func(t *testing.T) {
		props := filepath.Join(t.TempDir(), "sasl.properties")
		must(t, os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="app" password="`+appToken+`";`+"\n"), 0o600), "props")
		env := []string{"KAFKACHECK_PROPS=" + props}
		javaCheckEnv(t, env, "produce", gw.addr, topic, fmt.Sprint(count), fmt.Sprint(idempotent))
		got, n := consumed(t, javaCheckEnv(t, env, "assign", gw.addr, topic, "3", fmt.Sprint(count)))
		checkPerKey(t, "assigned consumer", got, n, count)
		if groups {
			got, n := consumed(t, javaCheckEnv(t, env, "group", gw.addr, topic, grp, fmt.Sprint(count)))
			checkPerKey(t, "group consumer", got, n, count)
		} else {
			t.Log("group consumer not run: the gateway does not advertise JoinGroup yet")
		}
	})
	t.Run("librdkafka", func(t *testing.T) {
		conf, err := json.Marshal(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN", "sasl.username": "app", "sasl.password": appToken})
		must(t, err, "conf")
		env := []string{"KAFKACHECK_CONF=" + string(conf)}
		rdkafkaCheckEnv(t, env, "produce", gw.addr, rdTopic, fmt.Sprint(count), fmt.Sprint(idempotent))
		got, n := consumed(t, rdkafkaCheckEnv(t, env, "assign", gw.addr, rdTopic, "3", fmt.Sprint(count)))
		checkPerKey(t, "assigned consumer", got, n, count)
	})
}

// uniqueToken is a fresh token of 32 characters (an auth file wants at least 22).
func uniqueToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
