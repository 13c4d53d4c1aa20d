package dev.retract.kit.tools;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The library's command-line entry: {@code match}, with exactly the interface
 * of {@code retract match}, and {@code replay}, which the simulator's Android
 * phones run. {@code scripts/android-match} calls {@code match}.
 */
public final class Main {
    private Main() {}

    public static void main(String[] arguments) throws IOException {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        PrintStream err = new PrintStream(System.err, true, StandardCharsets.UTF_8);
        int status;
        if (arguments.length > 0 && arguments[0].equals("match")) {
            status = MatchCommand.run(Arrays.copyOfRange(arguments, 1, arguments.length), out, err);
        } else if (arguments.length > 0 && arguments[0].equals("replay")) {
            BufferedReader input = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            status = ReplayCommand.run(Arrays.copyOfRange(arguments, 1, arguments.length), input, out, err);
        } else {
            err.println("usage: retractkit-android match --push PUSH.json --delivered DELIVERED.json");
            err.println("       retractkit-android replay < PHONES.jsonl   (see ReplayCommand)");
            status = 64;
        }
        out.flush();
        System.exit(status);
    }
}
