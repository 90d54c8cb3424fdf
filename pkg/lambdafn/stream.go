package lambdafn

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxAttributeDepth is DynamoDB's nesting limit for attribute values; deeper input is
// refused rather than recursed into.
const maxAttributeDepth = 32

// ErrBadImage is returned for a stream image that cannot be converted or decoded.
var ErrBadImage = errors.New("lambdafn: bad stream image")

// ConvertImage converts a stream record's image (aws-lambda-go's attribute values) to
// the SDK's attribute values, which the store's decoders read.
func ConvertImage(img map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	out := make(map[string]types.AttributeValue, len(img))
	for k, v := range img {
		av, err := convert(v, 1)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %q: %w", ErrBadImage, k, err)
		}
		out[k] = av
	}
	return out, nil
}

func convert(v events.DynamoDBAttributeValue, depth int) (types.AttributeValue, error) {
	if depth > maxAttributeDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxAttributeDepth)
	}
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: append([]string(nil), v.StringSet()...)}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: append([]string(nil), v.NumberSet()...)}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: append([][]byte(nil), v.BinarySet()...)}, nil
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, 0, len(l))
		for i, e := range l {
			av, err := convert(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, av)
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m := v.Map()
		out := make(map[string]types.AttributeValue, len(m))
		for k, e := range m {
			av, err := convert(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, errors.New("unknown attribute type")
}

// ImageToEvents converts an item (GetItem's or a DynamoDB Streams GetRecords image) to
// the attribute values a Lambda stream event carries, for the scalar types a sequencer
// item holds (S, N, B, BOOL).
func ImageToEvents(it map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(it))
	for k, v := range it {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = events.NewStringAttribute(x.Value)
		case *types.AttributeValueMemberN:
			out[k] = events.NewNumberAttribute(x.Value)
		case *types.AttributeValueMemberB:
			out[k] = events.NewBinaryAttribute(x.Value)
		case *types.AttributeValueMemberBOOL:
			out[k] = events.NewBooleanAttribute(x.Value)
		default:
			return nil, fmt.Errorf("lambdafn: attribute %q: type %T not converted", k, v)
		}
	}
	return out, nil
}
