// The calls of calls.json (expanded by transcript.py) through the client that
// openapi-generator's `go` generator made (package daogate, unmodified): each
// request body is read into the generated model with encoding/json, each
// result read by the generated model and written back by it, one JSON line a
// call. Then a few calls written out in plain typed code.
//
// usage: driver BASE_URL EXPANDED_CALLS TRANSCRIPT
package main

import (
	"context"
	"daogate"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

type param struct {
	Name  string          `json:"name"`
	In    string          `json:"in"`
	Value json.RawMessage `json:"value"`
}

type call struct {
	Op     string          `json:"op"`
	Path   string          `json:"path"`
	Params []param         `json:"params"`
	Body   json.RawMessage `json:"body"`
}

// What the generated errors offer: the typed problem, or the raw body.
type openAPIError interface {
	Body() []byte
	Model() interface{}
}

// openapi-generator's camelize: Books_addBook -> BooksAddBook, X-User-Id -> XUserId.
func pascal(name string) string {
	var out strings.Builder
	for _, part := range regexp.MustCompile(`[^A-Za-z0-9]+`).Split(name, -1) {
		if part != "" {
			out.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return out.String()
}

func fail(format string, arguments ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", arguments...)
	os.Exit(1)
}

func decoded(raw json.RawMessage, into reflect.Type) reflect.Value {
	value := reflect.New(into)
	if err := json.Unmarshal(raw, value.Interface()); err != nil {
		fail("%s into %s: %v", raw, into, err)
	}
	return value.Elem()
}

// The generated service method of an operation, on whichever service has it.
func operation(client *daogate.APIClient, name string) reflect.Value {
	services := reflect.ValueOf(client).Elem()
	for index := 0; index < services.NumField(); index++ {
		field := services.Field(index)
		if field.Kind() == reflect.Ptr && field.CanInterface() {
			if method := field.MethodByName(name); method.IsValid() {
				return method
			}
		}
	}
	fail("the generated client has no %s", name)
	return reflect.Value{}
}

func makeCall(client *daogate.APIClient, c call) (int, interface{}) {
	// Path parameters are the method's arguments after the context, in the path's order.
	var path []param
	given := map[string]param{}
	for _, p := range c.Params {
		if p.In == "path" {
			path = append(path, p)
		} else {
			given[pascal(p.Name)] = p
		}
	}
	sort.Slice(path, func(i, j int) bool {
		return strings.Index(c.Path, "{"+path[i].Name+"}") < strings.Index(c.Path, "{"+path[j].Name+"}")
	})
	method := operation(client, pascal(c.Op))
	if method.Type().NumIn() != len(path)+1 {
		fail("%s: the generated method takes %d arguments, %d path parameters given", c.Op, method.Type().NumIn(), len(path))
	}
	arguments := []reflect.Value{reflect.ValueOf(context.Background())}
	for index, p := range path {
		arguments = append(arguments, decoded(p.Value, method.Type().In(index+1)))
	}
	request := method.Call(arguments)[0]
	bodySent := c.Body == nil
	for index := 0; index < request.NumMethod(); index++ {
		name := request.Type().Method(index).Name
		setter := request.Method(index)
		if p, ok := given[name]; ok {
			request = setter.Call([]reflect.Value{decoded(p.Value, setter.Type().In(0))})[0]
			delete(given, name)
		}
	}
	if c.Body != nil {
		// The body's setter: the one taking a generated model.
		for index := 0; index < request.NumMethod(); index++ {
			setter := request.Method(index)
			if setter.Type().NumIn() == 1 && setter.Type().In(0).PkgPath() == "daogate" {
				request = setter.Call([]reflect.Value{decoded(c.Body, setter.Type().In(0))})[0]
				bodySent = true
			}
		}
	}
	if len(given) > 0 || !bodySent {
		fail("%s: the generated request takes no %v (body sent: %v)", c.Op, given, bodySent)
	}
	results := request.MethodByName("Execute").Call(nil)
	response := results[len(results)-2].Interface().(*http.Response)
	if err, _ := results[len(results)-1].Interface().(error); err != nil {
		generated, ok := err.(openAPIError)
		if !ok || response == nil {
			fail("%s: %v", c.Op, err)
		}
		problem, typed := generated.Model().(daogate.Problem)
		if !typed {
			if err := json.Unmarshal(generated.Body(), &problem); err != nil {
				fail("%s: a problem the generated Problem cannot read: %s", c.Op, generated.Body())
			}
		}
		return response.StatusCode, problem
	}
	if len(results) == 3 {
		return response.StatusCode, results[0].Interface()
	}
	return response.StatusCode, nil
}

func check(condition bool, format string, arguments ...interface{}) {
	if !condition {
		fail("typed call: "+format, arguments...)
	}
}

// Typed code as an application writes it.
func typed(client *daogate.APIClient) {
	ctx := context.Background()
	insert := daogate.NewDemoInsertItemRequest()
	insert.SetContent("typed")
	written, _, err := client.DemoAPI.DemoInsertItem(ctx).DemoInsertItemRequest(*insert).Execute()
	check(err == nil && written.Ok && written.Changes == 1 && written.LastInsertRowId > 1, "insertItem gave %+v, %v", written, err)
	get := daogate.NewDemoGetItemRequest()
	get.SetIndex(written.LastInsertRowId)
	item, _, err := client.DemoAPI.DemoGetItem(ctx).DemoGetItemRequest(*get).Execute()
	check(err == nil && item.Result.Get() != nil && *item.Result.Get() == "typed", "getItem gave %+v, %v", item, err)
	book, _, err := client.BooksAPI.BooksSelectBook(ctx).BooksSelectBookRequest(*daogate.NewBooksSelectBookRequest(1)).Execute()
	check(err == nil && book.Result.Get() != nil && book.Result.Get().GetYear() == 2000 && book.Result.Get().GetEmail() == "h@sqlite.org", "selectBook gave %+v, %v", book, err)
	none, _, err := client.MessagesAPI.MessagesGetMessage(ctx).XUserId("nobody").MessagesGetMessageRequest(*daogate.NewMessagesGetMessageRequest(1)).Execute()
	check(err == nil && none.Result.Get() == nil, "getMessage of nobody gave %+v, %v", none, err)
	duplicate := daogate.NewBooksAddBookRequest("dup")
	duplicate.SetIsbn("1")
	_, response, err := client.BooksAPI.BooksAddBook(ctx).BooksAddBookRequest(*duplicate).Execute()
	problem, _ := err.(openAPIError).Model().(daogate.Problem)
	check(response.StatusCode == 409 && problem.Code == "constraint_violation", "a duplicate gave %d %+v", response.StatusCode, problem)
}

func main() {
	configuration := daogate.NewConfiguration()
	configuration.Servers = daogate.ServerConfigurations{{URL: os.Args[1]}}
	client := daogate.NewAPIClient(configuration)
	text, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail("%v", err)
	}
	var calls []call
	if err := json.Unmarshal(text, &calls); err != nil {
		fail("%v", err)
	}
	var lines []string
	for _, c := range calls {
		status, body := makeCall(client, c)
		line, err := json.Marshal(map[string]interface{}{"op": c.Op, "status": status, "body": body})
		if err != nil {
			fail("%s: the generated model cannot write its value back: %v", c.Op, err)
		}
		lines = append(lines, string(line))
	}
	if err := os.WriteFile(os.Args[3], []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		fail("%v", err)
	}
	typed(client)
}
