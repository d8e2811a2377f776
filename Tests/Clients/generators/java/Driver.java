// The calls of calls.json (expanded by transcript.py) through the client that
// openapi-generator's `java` generator (library native) made, unmodified: each
// request body is read into the generated model by the client's own Jackson
// mapper, each result read by the generated model and written back by it, one
// JSON line a call. Then a few calls written out in plain typed code.
//
// usage: java -Dapis=API_CLASS,... Driver BASE_URL EXPANDED_CALLS TRANSCRIPT
// (the generated sources compiled with -parameters, so that the operations'
// parameters are found by name)
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import daogate.ApiClient;
import daogate.ApiException;
import daogate.ApiResponse;
import daogate.model.Problem;
import java.io.File;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class Driver {
    // openapi-generator's camelize: Books_addBook -> booksAddBook, X-User-Id -> xUserId.
    static String camel(String name) {
        StringBuilder out = new StringBuilder();
        for (String part : name.split("[^A-Za-z0-9]+")) {
            if (part.isEmpty()) continue;
            out.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
        }
        return Character.toLowerCase(out.charAt(0)) + out.substring(1);
    }

    public static void main(String[] args) throws Exception {
        ApiClient apiClient = new ApiClient();
        apiClient.updateBaseUri(args[0]);
        ObjectMapper mapper = apiClient.getObjectMapper();
        Map<String, Object[]> operations = new HashMap<>();
        for (String name : System.getProperty("apis").split(",")) {
            Class<?> type = Class.forName(name);
            Object api = type.getConstructor(ApiClient.class).newInstance(apiClient);
            for (Method method : type.getMethods()) {
                // Each operation has an overload taking extra headers too: the shorter one.
                Object[] known = operations.get(method.getName());
                if (method.getName().endsWith("WithHttpInfo")
                        && (known == null || ((Method) known[1]).getParameterCount() > method.getParameterCount())) {
                    operations.put(method.getName(), new Object[] {api, method});
                }
            }
        }
        List<String> lines = new ArrayList<>();
        for (JsonNode call : mapper.readTree(new File(args[1]))) {
            String op = call.get("op").asText();
            Object[] operation = operations.get(camel(op) + "WithHttpInfo");
            if (operation == null) throw new IllegalStateException("the generated client has no " + camel(op));
            Method method = (Method) operation[1];
            Map<String, JsonNode> given = new HashMap<>();
            for (JsonNode param : call.get("params")) given.put(camel(param.get("name").asText()), param.get("value"));
            Parameter[] parameters = method.getParameters();
            Object[] arguments = new Object[parameters.length];
            boolean sent = !call.has("body");
            for (int index = 0; index < parameters.length; index++) {
                Parameter parameter = parameters[index];
                JsonNode value = given.remove(parameter.getName());
                if (value == null && parameter.getType().getPackageName().equals("daogate.model") && call.has("body")) {
                    value = call.get("body");
                    sent = true;
                }
                arguments[index] = value == null ? null : mapper.treeToValue(value, parameter.getType());
            }
            if (!given.isEmpty() || !sent) throw new IllegalStateException(op + ": the generated method takes no " + given.keySet() + (sent ? "" : " nor a body"));
            ObjectNode line = mapper.createObjectNode();
            line.put("op", op);
            try {
                ApiResponse<?> response = (ApiResponse<?>) method.invoke(operation[0], arguments);
                line.put("status", response.getStatusCode());
                line.set("body", mapper.valueToTree(response.getData()));
            } catch (InvocationTargetException thrown) {
                if (!(thrown.getCause() instanceof ApiException)) throw thrown;
                ApiException error = (ApiException) thrown.getCause();
                if (error.getResponseBody() == null) throw new IllegalStateException(op + ": " + error.getMessage(), error);
                line.put("status", error.getCode());
                line.set("body", mapper.valueToTree(mapper.readValue(error.getResponseBody(), Problem.class)));
            }
            lines.add(mapper.writeValueAsString(line));
        }
        try (PrintWriter out = new PrintWriter(args[2], "UTF-8")) {
            for (String line : lines) out.println(line);
        }
        Typed.run(apiClient);
    }
}
