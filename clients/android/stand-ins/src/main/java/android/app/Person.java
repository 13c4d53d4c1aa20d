// Stand-in, declarations only: https://developer.android.com/reference/android/app/Person
// and https://developer.android.com/reference/android/app/Person.Builder (API 28).
package android.app;

public final class Person {
    Person() {
        throw new RuntimeException("Stub!");
    }

    public static class Builder {
        public Builder() {
            throw new RuntimeException("Stub!");
        }

        public Builder setName(CharSequence name) {
            throw new RuntimeException("Stub!");
        }

        public Builder setKey(String key) {
            throw new RuntimeException("Stub!");
        }

        public Person build() {
            throw new RuntimeException("Stub!");
        }
    }
}
