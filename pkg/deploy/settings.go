package deploy

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings is every setting the stack passes Strata's functions (and a user's consumer
// functions) through their environment, as typed fields: the one Go definition infra/
// renders with Env and pkg/node parses back with ParseSettings. Each field's `env` tag is
// its variable; the zero value of a field means "not set" (the node's default applies).
// A field added here is rendered and parsed with no other change; a variable the stack
// sets outside Settings fails infra's tests.
type Settings struct {
	// Bucket names the segment bucket (default dynamo.DefaultConfig().Bucket).
	Bucket string `env:"STRATA_BUCKET"`
	// ObjectPrefix is prepended to every segment object key (default none).
	ObjectPrefix string `env:"STRATA_OBJECT_PREFIX"`
	// TablePrefix is prepended to every table suffix of dynamo.Tables().
	TablePrefix string `env:"STRATA_TABLE_PREFIX"`
	// Bootstrap creates the bucket and tables when missing (development, emulators;
	// "1" when set). The stack never sets it.
	Bootstrap bool `env:"STRATA_BOOTSTRAP"`
	// MetricsNamespace is the CloudWatch namespace of the functions' EMF metrics
	// (default MetricsNamespace).
	MetricsNamespace string `env:"STRATA_METRICS_NAMESPACE"`

	// DefaultPartitions is the partition count of a topic created without one.
	DefaultPartitions int `env:"STRATA_DEFAULT_PARTITIONS"`
	// DefaultRetention is the retention of a topic created without one (milliseconds).
	DefaultRetention time.Duration `env:"STRATA_DEFAULT_RETENTION_MS"`
	// MaxRetention is the longest retention a topic may have (milliseconds), its
	// retention pin cap included: create and a pin change refuse more, and the stack's
	// bucket lifecycle rule expires segment objects a day after it.
	MaxRetention time.Duration `env:"STRATA_MAX_RETENTION_MS"`

	// GroupCommitWindow is the api function's group-commit window (a Go duration).
	// Zero means unset: DefaultManagedGroupCommitWindow on Lambda Managed Instances
	// (EnvMaxConcurrency above 1), off otherwise. Negative means off (rendered "0").
	GroupCommitWindow time.Duration `env:"STRATA_GROUP_COMMIT_WINDOW"`
	// GroupCommitBudget is the record bytes at which the api function's group-commit
	// batch is written before its window ends (zero: the log's default, 1 MiB; at most
	// 64 MiB). A stack running a wide window (250 ms) sets it to cut objects of several MB.
	GroupCommitBudget int `env:"STRATA_GROUP_COMMIT_BUDGET_BYTES"`
	// Grants are the api's grants keyed by principal ARN pattern (JSON, ParseGrants'
	// formats); empty means every caller is refused unless EveryPrincipalAdmin is set.
	Grants string `env:"STRATA_GRANTS"`
	// EveryPrincipalAdmin makes every principal API Gateway admitted an admin (the
	// explicit opt-out of authorization, "1"); it excludes Grants.
	EveryPrincipalAdmin bool `env:"STRATA_EVERY_PRINCIPAL_ADMIN"`

	// Subscriptions are dispatch's subscriptions.
	Subscriptions []Subscription `env:"STRATA_SUBSCRIPTIONS"`
	// SubscriptionsPath is the SSM Parameter Store path of the subscriptions other apps
	// attach (EnvSubscriptionsPath); empty means none.
	SubscriptionsPath string `env:"STRATA_SUBSCRIPTIONS_PATH"`

	// Topic and Group are the only topic and group a consumer function accepts.
	Topic string `env:"STRATA_TOPIC"`
	Group string `env:"STRATA_GROUP"`
	// BusinessTable names the example consumer's business table.
	BusinessTable string `env:"STRATA_BUSINESS_TABLE"`
	// RetentionFanout makes the retention function fan its scheduled pass out per topic,
	// invoking itself (AWS_LAMBDA_FUNCTION_NAME) asynchronously once per live topic ("1").
	// The stack sets it on the retention function, whose role may invoke itself; unset,
	// one invocation passes every topic.
	RetentionFanout bool `env:"STRATA_RETENTION_FANOUT"`
	// CompactFanout makes the compaction function fan its scheduled pass out per
	// partition of each compacted topic, invoking itself (AWS_LAMBDA_FUNCTION_NAME)
	// asynchronously once per partition ("1"). The stack sets it on the compaction
	// function, whose role may invoke itself; unset, one invocation passes every topic.
	CompactFanout bool `env:"STRATA_COMPACT_FANOUT"`
	// CompactFunction is the compaction function's name or ARN: the api function then
	// runs the dirty-ratio trigger (compact.Trigger) on its appends to compacted topics
	// and invokes it asynchronously for a partition found dirty. Empty: no trigger.
	CompactFunction string `env:"STRATA_COMPACT_FUNCTION"`
}

// Names of the variables of Settings (the `env` tags), for code that names one.
const (
	EnvBootstrap          = "STRATA_BOOTSTRAP"
	EnvDefaultPartitions  = "STRATA_DEFAULT_PARTITIONS"
	EnvDefaultRetentionMS = "STRATA_DEFAULT_RETENTION_MS"
	EnvMaxRetentionMS     = "STRATA_MAX_RETENTION_MS"
	EnvRetentionFanout    = "STRATA_RETENTION_FANOUT"
	EnvCompactFanout      = "STRATA_COMPACT_FANOUT"
	EnvCompactFunction    = "STRATA_COMPACT_FUNCTION"
)

// SettingNames returns the variable of every field of Settings, sorted.
func SettingNames() []string {
	var out []string
	forEachSetting(func(f reflect.StructField) { out = append(out, f.Tag.Get("env")) })
	sort.Strings(out)
	return out
}

func forEachSetting(fn func(reflect.StructField)) {
	t := reflect.TypeFor[Settings]()
	for i := range t.NumField() {
		fn(t.Field(i))
	}
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	subsType     = reflect.TypeFor[[]Subscription]()
)

// Env renders s as the functions' environment: one variable per non-zero field.
func (s Settings) Env() (map[string]string, error) {
	out := map[string]string{}
	v := reflect.ValueOf(s)
	var err error
	forEachSetting(func(f reflect.StructField) {
		fv := v.FieldByIndex(f.Index)
		if err != nil || fv.IsZero() {
			return
		}
		name := f.Tag.Get("env")
		switch {
		case f.Type == durationType && strings.HasSuffix(name, "_MS"):
			out[name] = strconv.FormatInt(time.Duration(fv.Int()).Milliseconds(), 10)
		case f.Type == durationType:
			d := time.Duration(fv.Int())
			if d < 0 {
				out[name] = "0"
			} else {
				out[name] = d.String()
			}
		case f.Type == subsType:
			out[name], err = EncodeSubscriptions(fv.Interface().([]Subscription))
		case f.Type.Kind() == reflect.Bool:
			out[name] = "1"
		case f.Type.Kind() == reflect.Int:
			out[name] = strconv.FormatInt(fv.Int(), 10)
		default:
			out[name] = fv.String()
		}
	})
	return out, err
}

// ParseSettings reads Settings from getenv (os.Getenv in a function): every variable of
// Settings is looked up once, its value trimmed of surrounding space; an empty value is
// unset. A value that does not parse is an error naming the variable and what it wants.
// It checks syntax only: the node checks ranges.
func ParseSettings(getenv func(string) string) (Settings, error) {
	var s Settings
	v := reflect.ValueOf(&s).Elem()
	var errs []string
	forEachSetting(func(f reflect.StructField) {
		name := f.Tag.Get("env")
		raw := strings.TrimSpace(getenv(name))
		if raw == "" {
			return
		}
		fv := v.FieldByIndex(f.Index)
		bad := func(want string) { errs = append(errs, fmt.Sprintf("%s=%q: want %s", name, raw, want)) }
		switch {
		case f.Type == durationType && strings.HasSuffix(name, "_MS"):
			ms, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || ms < 1 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
				bad("a whole number of milliseconds, at least 1")
				return
			}
			fv.SetInt(int64(time.Duration(ms) * time.Millisecond))
		case f.Type == durationType:
			d, err := time.ParseDuration(raw)
			if err != nil || d < 0 {
				bad(`a Go duration such as "5ms" ("0" for off)`)
				return
			}
			if d == 0 {
				d = -1
			}
			fv.SetInt(int64(d))
		case f.Type == subsType:
			subs, err := ParseSubscriptions(raw)
			if err != nil {
				errs = append(errs, name+": "+strings.TrimPrefix(err.Error(), "deploy: "))
				return
			}
			fv.Set(reflect.ValueOf(subs))
		case f.Type.Kind() == reflect.Bool:
			switch raw { // only 1 and 0: a typo never turns a switch on
			case "1":
				fv.SetBool(true)
			case "0":
			default:
				bad("1 or 0")
			}
		case f.Type.Kind() == reflect.Int:
			n, err := strconv.Atoi(raw)
			if err != nil || n < 1 {
				bad("a positive whole number")
				return
			}
			fv.SetInt(int64(n))
		default:
			fv.SetString(raw)
		}
	})
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("deploy: %s", strings.Join(errs, "; "))
	}
	return s, nil
}
