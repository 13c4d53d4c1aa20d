package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The feed against an HTTP server on loopback that answers as Retract's does. */
class RetractionFeedTest {
    private HttpServer server;
    private final List<String> requests = Collections.synchronizedList(new ArrayList<>());

    /** A server whose answer to each request is {@code answer(query)}: {status, etag or null, body}. */
    private String serve(Function<HttpExchange, String[]> answer) throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", exchange -> {
            String[] reply = answer.apply(exchange);
            requests.add(exchange.getRequestURI() + " auth=" + exchange.getRequestHeaders().getFirst("Authorization")
                    + " inm=" + exchange.getRequestHeaders().getFirst("If-None-Match"));
            if (reply[1] != null) exchange.getResponseHeaders().set("ETag", reply[1]);
            byte[] body = reply[2].getBytes(StandardCharsets.UTF_8);
            int status = Integer.parseInt(reply[0]);
            exchange.sendResponseHeaders(status, status == 304 ? -1 : body.length);
            if (status != 304) exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        if (server != null) server.stop(0);
    }

    private static String page(String cursor, boolean more, String... references) {
        StringBuilder list = new StringBuilder();
        for (String reference : references) {
            if (list.length() > 0) list.append(',');
            list.append("{\"id\":\"r\",\"references\":[").append(Json.quote(reference)).append("],\"retractedAt\":\"2026-11-29T10:00:00Z\"}");
        }
        return "{\"cursor\":\"" + cursor + "\",\"hasMore\":" + more + ",\"retractions\":[" + list + "]}";
    }

    @Test
    void aCatchUpReadsEveryPageCancelsThenMovesTheCursorAndAsksWithItsValidatorNextTime() throws Exception {
        String base = serve(exchange -> {
            String query = exchange.getRequestURI().getRawQuery();
            if (!query.contains("since=")) return new String[] {"200", "\"e1\"", page("c1", true, "m1")};
            if (query.contains("since=c1")) return new String[] {"200", "\"e2\"", page("c2", false, "m2")};
            if ("\"e3\"".equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) return new String[] {"304", "\"e3\"", ""};
            return new String[] {"200", "\"e3\"", page("c2", false)};
        });
        RetractionFeed feed = new RetractionFeed(base + "/", "client-key", "chat");
        FeedCursor cursor = new FeedCursor(TextStorage.inMemory());
        InMemoryShade shade = new InMemoryShade(List.of(new ShownNotification("m1", 0, null, null, null),
                new ShownNotification("m2", 7, Map.of("pushNotificationReferenceId", "m2"), null, null),
                new ShownNotification("m3", 0, null, null, null)));
        RetractClient client = new RetractClient(null);

        assertEquals(0, client.catchUp(feed, cursor, shade, 5_000).pages, "no token saved: nothing read");
        cursor.saveToken("fcm:token/1");
        RetractClient.CatchUp first = client.catchUp(feed, cursor, shade, 5_000);
        assertEquals(Set.of("m1", "m2"), first.references);
        assertEquals(2, first.pages);
        assertEquals(List.of("m3"), RetractClientTest.names(shade.active()));
        assertEquals("c2", cursor.position().cursor);
        assertTrue(requests.get(0).startsWith("/v1/devices/fcm:token%2F1/retractions?transport=fcm&app=chat auth=Bearer client-key inm=null"),
                requests.get(0));

        client.catchUp(feed, cursor, shade, 5_000);
        assertEquals("\"e3\"", cursor.position().validator);
        RetractClient.CatchUp quiet = client.catchUp(feed, cursor, shade, 5_000);
        assertEquals(Set.of(), quiet.references);
        assertTrue(requests.get(requests.size() - 1).endsWith("inm=\"e3\""), requests.toString());
    }

    @Test
    void aCatchUpThatRunsOutOfTimeKeepsWhatItReadAndStartsAfterItNextTime() throws Exception {
        String base = serve(exchange -> {
            String query = exchange.getRequestURI().getRawQuery();
            if (!query.contains("since=")) return new String[] {"200", "\"e1\"", page("c1", true, "m1")};
            try {
                Thread.sleep(5_000);
            } catch (InterruptedException stopped) {
                Thread.currentThread().interrupt();
            }
            return new String[] {"200", "\"e2\"", page("c2", false, "m2")};
        });
        FeedCursor cursor = new FeedCursor(TextStorage.inMemory());
        cursor.saveToken("t");
        InMemoryShade shade = new InMemoryShade(List.of(new ShownNotification("m1", 0, null, null, null),
                new ShownNotification("m2", 0, null, null, null)));
        RetractClient.CatchUp caughtUp = new RetractClient(null).catchUp(new RetractionFeed(base, "k", null), cursor, shade, 2_000);
        assertEquals(Set.of("m1"), caughtUp.references);
        assertEquals(1, caughtUp.pages);
        assertTrue(caughtUp.stoppedBy.getMessage().contains("time budget"), caughtUp.stoppedBy.getMessage());
        assertEquals(List.of("m2"), RetractClientTest.names(shade.active()));
        assertEquals("c1", cursor.position().cursor);
        assertThrows(IllegalArgumentException.class, () -> new RetractionFeed("file:///etc", "k", null));
    }

    @Test
    void aRefusalNamesTheProblemAndLeavesTheCursorWhereItWas() throws Exception {
        String base = serve(exchange -> new String[] {"401", null,
                "{\"type\":\"https://retract.dev/problems/unauthorized\",\"detail\":\"the key is revoked\"}"});
        FeedCursor cursor = new FeedCursor(TextStorage.inMemory());
        cursor.saveToken("t");
        FeedException problem = assertThrows(FeedException.class,
                () -> new RetractClient(null).catchUp(new RetractionFeed(base, "k", null), cursor, new InMemoryShade(), 5_000));
        assertEquals(401, problem.status());
        assertEquals("https://retract.dev/problems/unauthorized", problem.type());
        assertEquals("HTTP 401: the key is revoked", problem.getMessage());
        assertNull(cursor.position().cursor);
    }

    @Test
    void anAnswerThatIsNotAPageIsRefused() throws Exception {
        String base = serve(exchange -> new String[] {"200", null, "<html>captive portal</html>"});
        FeedException problem = assertThrows(FeedException.class, () -> new RetractionFeed(base, "k", null).page("t", null, null, 5_000));
        assertEquals("HTTP 200: the answer is not a retraction feed page", problem.getMessage());
    }

    @Test
    void aServerThatDoesNotAnswerCostsNoMoreThanTheBudget() throws Exception {
        String base = serve(exchange -> {
            try {
                Thread.sleep(3_000);
            } catch (InterruptedException stopped) {
                Thread.currentThread().interrupt();
            }
            return new String[] {"200", null, page("c", false)};
        });
        long started = System.nanoTime();
        FeedException problem = assertThrows(FeedException.class, () -> new RetractionFeed(base, "k", null).read("t", null, null, 300));
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        assertEquals(0, problem.status());
        assertTrue(problem.getMessage().contains("time budget"), problem.getMessage());
        // The server answers after 3 s; a busy machine may start the read late, but not that late.
        assertTrue(tookMillis < 2_000, "took " + tookMillis + " ms");
    }

    @Test
    void aNewTokenStartsTheFeedAgainAndAnUnreachableServerIsNamed() throws Exception {
        FeedCursor cursor = new FeedCursor(TextStorage.inMemory());
        cursor.saveToken("a");
        cursor.advance("a", "c9", null);
        cursor.saveToken("a");
        assertEquals("c9", cursor.position().cursor);
        cursor.saveToken("b");
        assertNull(cursor.position().cursor);
        cursor.advance("a", "c10", null);
        assertNull(cursor.position().cursor, "a read for the old token does not move the new one's cursor");

        java.net.ServerSocket closed = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        int port = closed.getLocalPort();
        closed.close();
        FeedException problem = assertThrows(FeedException.class,
                () -> new RetractionFeed("http://127.0.0.1:" + port, "k", null).page("t", null, null, 2_000));
        assertTrue(problem.getMessage().startsWith("the feed cannot be reached"), problem.getMessage());
    }
}
