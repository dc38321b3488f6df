/** The test service's .proto text: the gateway gets it inline, the grpc-js test server loads the same text. */
export const CATALOG_PROTO = `syntax = "proto3";
package shop.v1;

import "google/api/annotations.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/empty.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

enum Color {
  COLOR_UNSPECIFIED = 0;
  RED = 1;
  GREEN = 2;
}

message Money {
  string currency_code = 1;
  int64 units = 2;
}

message Item {
  string item_id = 1;
  string display_name = 2;
  Money price = 3;
  Color color = 4;
  repeated string tags = 5;
  bytes thumbnail = 6;
  int64 stock_count = 7;
  map<string, int32> counts = 8;
  bool on_sale = 9;
  double weight = 10;
  repeated Money history = 11;
}

message Page {
  int32 size = 1;
  string token = 2;
  string cursor = 3 [json_name = "next"];
}

message GetItemRequest {
  string item_id = 1;
  bool with_tags = 2;
  Color color = 3;
  repeated string fields = 4;
  Page page = 5;
  uint64 version = 6;
}

message CreateItemRequest {
  string shelf = 1;
  Item item = 2;
}

message FailRequest {
  int32 code = 1;
  string message = 2;
}

message Empty {}

message Event {
  google.protobuf.Timestamp at = 1;
  google.protobuf.Duration took = 2;
  google.protobuf.Int64Value count = 3;
  google.protobuf.StringValue note = 4;
  google.protobuf.FieldMask mask = 5;
  google.protobuf.Struct meta = 6;
  google.protobuf.Value any_value = 7;
  google.protobuf.ListValue list = 8;
  google.protobuf.BoolValue flag = 9;
  google.protobuf.Empty nothing = 10;
  repeated google.protobuf.Timestamp history = 11;
}

message SlowRequest {
  int32 ms = 1;
}

service Catalog {
  rpc GetItem(GetItemRequest) returns (Item) {
    option (google.api.http) = { get: "/v1/items/{item_id}" };
  }
  rpc CreateItem(CreateItemRequest) returns (Item) {
    option (google.api.http) = { post: "/v1/shelves/{shelf}/items" body: "item" };
  }
  rpc Echo(GetItemRequest) returns (GetItemRequest);
  rpc Lookup(GetItemRequest) returns (GetItemRequest) {
    option (google.api.http) = {
      get: "/v5/items/{item_id}"
      additional_bindings { get: "/v5/{item_id=shelves/*/items/*}" }
      additional_bindings { post: "/v5/items:lookup" body: "*" }
    };
  }
  rpc Fail(FailRequest) returns (Empty);
  rpc Slow(SlowRequest) returns (Empty);
  rpc Watch(GetItemRequest) returns (stream Item);
  rpc EchoEvent(Event) returns (Event);
  rpc Tally(stream GetItemRequest) returns (Item);
  rpc Chat(stream GetItemRequest) returns (stream Item);
}
`;
