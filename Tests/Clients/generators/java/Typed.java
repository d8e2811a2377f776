// A few calls written out as an application writes them with the generated
// Java client: typed requests, typed results, a typed problem. (The native
// library's methods take the headers positionally: X-User-Id, X-Storage,
// X-Int64-Format, left null where not needed.)
import daogate.ApiClient;
import daogate.ApiException;
import daogate.api.BooksApi;
import daogate.api.DemoApi;
import daogate.api.MessagesApi;
import daogate.model.BooksAddBookRequest;
import daogate.model.BooksSelectBook200Response;
import daogate.model.BooksSelectBookRequest;
import daogate.model.DemoGetItemRequest;
import daogate.model.DemoInsertItemRequest;
import daogate.model.MessagesGetMessage200Response;
import daogate.model.MessagesGetMessageRequest;
import daogate.model.Problem;
import daogate.model.WriteResult;

final class Typed {
    static void check(boolean condition, String what) {
        if (!condition) throw new AssertionError("typed call: " + what);
    }

    static void run(ApiClient apiClient) throws Exception {
        DemoApi demo = new DemoApi(apiClient);
        WriteResult written = demo.demoInsertItem(null, null, null, new DemoInsertItemRequest().content("typed"));
        check(Boolean.TRUE.equals(written.getOk()) && written.getChanges() == 1 && written.getLastInsertRowId() > 1, "insertItem gave " + written);
        Object item = demo.demoGetItem(null, null, null, new DemoGetItemRequest().index(written.getLastInsertRowId())).getResult();
        check("typed".equals(item), "getItem gave " + item);

        BooksApi books = new BooksApi(apiClient);
        BooksSelectBook200Response book = books.booksSelectBook(new BooksSelectBookRequest().id(1L), null, null, null);
        check(book.getResult() != null && book.getResult().getYear() == 2000 && "h@sqlite.org".equals(book.getResult().getEmail()), "selectBook gave " + book);

        MessagesApi messages = new MessagesApi(apiClient);
        MessagesGetMessage200Response none = messages.messagesGetMessage("nobody", new MessagesGetMessageRequest().msgId(1L), null, null);
        check(none.getResult() == null, "getMessage of nobody gave " + none);

        try {
            books.booksAddBook(new BooksAddBookRequest().title("dup").isbn("1"), null, null, null);
            check(false, "a duplicate isbn was accepted");
        } catch (ApiException error) {
            Problem problem = apiClient.getObjectMapper().readValue(error.getResponseBody(), Problem.class);
            check(error.getCode() == 409 && "constraint_violation".equals(problem.getCode()), "a duplicate gave " + problem);
        }
    }
}
