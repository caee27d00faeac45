package stores

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// EnvDynamoDB is the DynamoDB-compatible server (dynalite) the emulator
// script starts beside the S3 one.
const EnvDynamoDB = "COMPACTORD_TEST_DYNAMODB_ENDPOINT"

// DynamoTable is the DynamoDB table every test table's entries go to (each
// table path is its own hash key).
const DynamoTable = "compactord-test"

// S3DynamoTable returns a fresh table URL on the S3 emulator whose commits
// go through the DynamoDB log store on the DynamoDB emulator.
func S3DynamoTable(t *testing.T) string {
	ddb := RequireEnv(t, EnvDynamoDB)
	base := S3Table(t)
	if err := EnsureDynamoTable(context.Background(), ddb, DynamoTable); err != nil {
		t.Fatal(err)
	}
	q := url.Values{}
	q.Set("log_store", "dynamodb")
	q.Set("dynamodb_table", DynamoTable)
	q.Set("dynamodb_endpoint", ddb)
	return base + "&" + q.Encode()
}

// DynamoClient is a DynamoDB client for the server at endpoint, with the
// SDK's default credentials chain.
func DynamoClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}

// EnsureDynamoTable creates the commit-entry table Delta's documentation
// gives (aws dynamodb create-table ... tablePath HASH, fileName RANGE, both
// S, PAY_PER_REQUEST) unless it exists.
func EnsureDynamoTable(ctx context.Context, endpoint, name string) error {
	c, err := DynamoClient(ctx, endpoint)
	if err != nil {
		return err
	}
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("tablePath"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("fileName"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("tablePath"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("fileName"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create dynamodb table %s at %s: %w", name, endpoint, err)
	}
	return dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute)
}

// errProtocolExists is the protocol writer's FileAlreadyExistsException.
